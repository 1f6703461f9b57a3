"""Proposals follow pushes and archived refs: each event only enqueues a task
(reviews.tasks), once its transaction commits; the git and database work runs in a worker."""

from __future__ import annotations

from django.db import transaction
from django.dispatch import receiver

from repos.signals import push_recorded
from reviews import tasks
from workspaces.signals import workspace_ref_archived


@receiver(push_recorded)
def follow_push(sender, push_id: int, **_kwargs) -> None:
    transaction.on_commit(lambda: tasks.follow_push.delay(push_id))


@receiver(workspace_ref_archived)
def follow_archive(
    sender, repository_id: int, ref: str, sha: str, push_id: int | None = None, **_kwargs
) -> None:
    transaction.on_commit(lambda: tasks.follow_archive.delay(repository_id, ref, sha, push_id))
