"""Workspaces follow other apps' events: each receiver only enqueues a task (workspaces.tasks)
once its transaction commits, so nothing runs git or writes in the web process after a push."""

from __future__ import annotations

from django.dispatch import receiver

from repos import enqueue
from repos.signals import push_recorded, repository_deleted, repository_purging
from workspaces import exports
from workspaces.signals import workspace_ref_archived


@receiver(push_recorded)
def follow_push(sender, push_id: int, **_kwargs) -> None:
    enqueue.after_commit("workspaces.tasks.follow_push", push_id)


@receiver(workspace_ref_archived)
def notify_archived_ref(sender, repository_id: int, ref: str, sha: str, **_kwargs) -> None:
    enqueue.after_commit("workspaces.tasks.notify_archived_ref", repository_id, ref, sha)


@receiver(repository_deleted)
def tell_contributors(sender, repository_id: int, **_kwargs) -> None:
    """Contributors with unmerged work learn of the deletion (and of the export) from a task:
    finding them runs git."""
    enqueue.after_commit("workspaces.tasks.notify_deleted_repository_contributors", repository_id)


@receiver(repository_purging)
def drop_exports(sender, repository, **_kwargs) -> None:
    # Inside the purge, before the repository's row goes: a failure here stops this purge.
    exports.exports_purge(repository)
