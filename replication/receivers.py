"""Signal receivers: the replication app reacts to the log (repos.signals.repository_changed)."""
