"""Thin Celery tasks of imports and mirrors: take ids, load rows, call a service.

Each is named `repos.tasks.<function>`, not after this module: messages a broker may still
hold under those names, and the beat schedule (hostsite/celery_config.py), must reach them."""

from __future__ import annotations

from celery import shared_task

from repos import enqueue
from repos.models import Mirror
from sources import import_runs, mirrors


@shared_task(name="repos.tasks.run_import", bind=True, acks_late=True, ignore_result=True, max_retries=None)
def run_import(self, import_id: int, sealed_credentials: str | None = None) -> str:
    """Run one queued import (sources.import_runs). Credentials arrive sealed (repos.sealing).
    A redelivered task whose import still has a live worker's heartbeat comes back when that
    heartbeat would be stale: if the worker died, it restarts the fetch then."""
    outcome = import_runs.run_import(import_id, sealed_credentials)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.state


@shared_task(name="repos.tasks.sync_mirror", acks_late=True, ignore_result=True)
def sync_mirror(mirror_id: int) -> str:
    """One pull-mirror sync (sources.mirrors). Idempotent: a second delivery finds the mirror
    claimed (busy) or in step with its upstream (unchanged)."""
    mirror = Mirror.objects.filter(pk=mirror_id).first()
    if mirror is None:
        return "gone"
    return mirrors.sync_mirror(mirror).outcome


@shared_task(name="repos.tasks.schedule_mirror_syncs", ignore_result=True)
def schedule_mirror_syncs() -> int:
    """Periodic (Celery beat, every minute): enqueue a sync for each mirror that is due."""
    ids = mirrors.schedule_due()
    for mirror_id in ids:
        enqueue.send("repos.tasks.sync_mirror", mirror_id)
    return len(ids)
