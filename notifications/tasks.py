"""Thin Celery tasks for notifications: repos' events told to the people they concern."""

from __future__ import annotations

from celery import shared_task

from notifications import services
from repos.models import Repository


@shared_task(acks_late=True, ignore_result=True)
def notify_mirror_status(repository_id: int, failing: bool, error: str = "") -> str:
    repo = (
        Repository.objects.select_related("owner").filter(pk=repository_id, deleted_at__isnull=True).first()
    )
    if repo is None:
        return "gone"
    return f"told {services.mirror_status_notify(repo=repo, failing=failing, error=error)}"
