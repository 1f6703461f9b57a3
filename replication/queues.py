"""Queue names: each replica consumes only its own queue, so a job sent for it is its alone."""

from __future__ import annotations


def replica_queue(node_name: str) -> str:
    return f"replica-{node_name}"
