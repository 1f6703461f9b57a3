"""Line comments: threads anchored to (revision, path, side, lines) of a proposal's diff,
carried to later revisions through the interdiff, and suggested changes applied as commits."""
