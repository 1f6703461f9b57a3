"""Thin Celery tasks: take ids, load rows, call a service."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from celery import shared_task
from django.conf import settings

from bundles import selectors, services
from bundles.storage import StorageError
from gitcore.git import GitTimeout
from repos import enqueue
from repos.models import Push, Repository


@shared_task(
    bind=True,
    acks_late=True,
    ignore_result=True,
    max_retries=5,
    autoretry_for=(GitTimeout, StorageError),
    retry_backoff=60,
)
def build_bundles(self, repo_id: int, requested_at: float | None = None) -> str:
    repo = Repository.objects.filter(pk=repo_id, deleted_at__isnull=True).select_related("owner").first()
    if repo is None:
        return "gone"  # or deleted: its bundles go at purge
    when = datetime.fromtimestamp(requested_at, tz=UTC) if requested_at is not None else None
    result = services.bundles_build(repo=repo, requested_at=when)
    if result.status == "busy" and requested_at is not None:
        # The running build may have started before this push: come back after it.
        raise self.retry(countdown=max(settings.BUNDLE_DEBOUNCE_SECONDS, 10))
    return f"{result.status}: {result.detail}" if result.detail else result.status


@shared_task(ignore_result=True)
def schedule_bundle_builds() -> int:
    """Periodic (Celery beat): build for repositories never built, pushed to canonical refs
    since their last build started, or whose newest build failed or died with its worker.
    Catches pushes whose debounced build was lost."""
    ids = list(services.repositories_due_for_bundles().values_list("pk", flat=True)[:1000])
    for repo_id in ids:
        enqueue.send("bundles.tasks.build_bundles", repo_id)
    return len(ids)


@shared_task(acks_late=True, ignore_result=True)
def follow_push(push_id: int) -> str:
    """A push to branches or tags asks for a build, debounced: the countdown lets a burst of
    pushes share one build, each task skipping itself if a build started after its push
    (bundles.services._covered_by_later_build)."""
    push = Push.objects.filter(pk=push_id).values_list("repository_id", "created_at").first()
    if push is None:
        return "gone"
    if not selectors.push_moved_canonical_refs(push_id):
        return "workspaces only"
    repo_id, pushed_at = push
    enqueue.send(
        "bundles.tasks.build_bundles",
        repo_id,
        pushed_at.timestamp(),
        countdown=settings.BUNDLE_DEBOUNCE_SECONDS,
    )
    return "queued"


@shared_task(acks_late=True, ignore_result=True)
def follow_visibility_change(repo_id: int) -> str:
    repo = Repository.objects.filter(pk=repo_id, deleted_at__isnull=True).select_related("owner").first()
    if repo is None:
        return "gone"
    deleted = services.bundles_visibility_changed(repo=repo)
    # With the request time: if a build is running, the build waits for it and runs after.
    enqueue.send("bundles.tasks.build_bundles", repo_id, time.time())
    return f"deleted {deleted}"
