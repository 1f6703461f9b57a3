"""Thin Celery tasks: take ids, load rows, call a service."""

from __future__ import annotations

from celery import shared_task

from repos import maintenance
from repos.git import GitTimeout
from repos.models import Repository


@shared_task(
    autoretry_for=(GitTimeout,), retry_backoff=60, max_retries=3, acks_late=True, ignore_result=True
)
def maintain_repository(repo_id: int) -> str:
    repo = Repository.objects.filter(pk=repo_id).select_related("owner").first()
    if repo is None:
        return "gone"
    result = maintenance.maintain_repository(repo)
    return "done" if result.ran else f"skipped: {result.reason}"


@shared_task(ignore_result=True)
def schedule_maintenance() -> int:
    """Periodic (Celery beat): enqueue maintenance for every repository that is due."""
    ids = list(maintenance.repositories_due_for_maintenance().values_list("pk", flat=True)[:1000])
    for repo_id in ids:
        maintain_repository.delay(repo_id)
    return len(ids)
