"""Queue names: each replica's worker consumes only its own queue, so a job sent for it is its
alone. Here, with the processes, because the supervisor (hostsite.run) starts that worker on it
and replication sends to it."""

from __future__ import annotations


def replica_queue(node_name: str) -> str:
    return f"replica-{node_name}"
