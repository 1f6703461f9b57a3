"""Thin Celery tasks of replication. `sync_repository` runs on a replica's own queue,
`replica-<node>` (hostsite.queues); a message carries ids only."""

from __future__ import annotations

from celery import shared_task

from replication import sync

# A failed sync (the primary unreachable, a fetch killed) is retried with a growing delay; past
# the last retry the catch-up sweep (replication.catchup) sends it again.
RETRY_OPTIONS = {
    "autoretry_for": (Exception,),
    "retry_backoff": 2,
    "retry_backoff_max": 300,
    "max_retries": 12,
}


@shared_task(acks_late=True, ignore_result=True, **RETRY_OPTIONS)
def sync_repository(repository_id: int, generation: int, fresh: bool = False) -> str:
    """Bring this replica's copy of the repository to at least `generation` (coalesced: one
    fetch serves every job queued behind it). `fresh`: drop the copy and start over."""
    return sync.sync_repository(repository_id, generation, fresh=fresh)
