"""Thin Celery tasks for reviews: proposals follow pushes and archived refs (reviews.following)."""

from __future__ import annotations

from celery import shared_task

from repos.git import GitTimeout
from repos.models import Push
from reviews import following


def _push(push_id: int | None) -> Push | None:
    if push_id is None:
        return None
    return (
        Push.objects.filter(pk=push_id)
        .select_related("repository__owner", "pusher")
        .prefetch_related("ref_updates")
        .first()
    )


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=30, max_retries=3, acks_late=True, ignore_result=True)
def follow_push(push_id: int) -> str:
    push = _push(push_id)
    if push is None:
        return "gone"
    following.proposals_follow_push(push=push)
    return "done"


@shared_task(acks_late=True, ignore_result=True)
def follow_archive(repository_id: int, ref: str, sha: str, push_id: int | None = None) -> str:
    following.proposals_follow_archive(repository_id=repository_id, ref=ref, sha=sha, push=_push(push_id))
    return "done"
