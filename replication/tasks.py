"""Thin Celery tasks of replication. `sync_repository` runs on a replica's own queue,
`replica-<node>` (replication.queues); a message carries ids only."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True, ignore_result=True)
def sync_repository(repository_id: int, generation: int, fresh: bool = False) -> str:
    """Bring this replica's copy of the repository to at least `generation` (coalesced: one
    fetch serves every job queued behind it). `fresh`: drop the copy and start over."""
    from replication import sync

    return sync.sync_repository(repository_id, generation, fresh=fresh)
