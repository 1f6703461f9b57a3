"""One git pipeline for smart HTTP, SSH and the replication endpoint: a `GitCall` goes through
explicit steps (repos.pipeline.serve lists them), so transfers, object checks, the push's
record, acknowledgements and the advertisement cache are steps, not branches of one function.
"""

from repos.pipeline.call import REPLICA, GitCall
from repos.pipeline.serve import advertise, rpc

__all__ = ["REPLICA", "GitCall", "advertise", "rpc"]
