"""Thin Celery tasks for the search index: they take ids, return quietly when the repository
is gone, and call search.indexing / search.moderation. Acknowledged late and idempotent: a
task delivered twice finds nothing left to do."""

from __future__ import annotations

from celery import shared_task

from repos import enqueue
from repos.models import Repository
from search import indexing, moderation

# A run that finds another one indexing the same repository tries again this much later:
# the running one may have read the refs before this task's push.
BUSY_RETRY_SECONDS = 15


@shared_task(bind=True, ignore_result=True, acks_late=True, max_retries=40)
def update_index(self, repository_id: int) -> str:
    repo = (
        Repository.objects.filter(pk=repository_id, deleted_at__isnull=True).select_related("owner").first()
    )
    if repo is None:
        return "gone"
    outcome = indexing.index_update(repo=repo)
    if outcome.busy:
        raise self.retry(countdown=BUSY_RETRY_SECONDS)
    if outcome.more:
        enqueue.send("search.tasks.update_index", repository_id)
    return (
        f"files {outcome.files_written} written, {outcome.files_deleted} deleted; commits {outcome.commits}"
    )


@shared_task(ignore_result=True, acks_late=True)
def follow_moderation(repository_id: int) -> str:
    repo = Repository.objects.filter(pk=repository_id).first()
    if repo is None:
        return "gone"
    return moderation.index_follow_moderation(repo=repo)
