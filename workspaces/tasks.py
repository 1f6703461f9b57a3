"""Thin Celery tasks for workspaces: follow a push, index a workspace push, clean up after a
branch moved, tell the owner of an archived ref, expire archived refs, export workspaces."""

from __future__ import annotations

from celery import shared_task

from gitcore.git import GitTimeout
from gitcore.gittools import RefTransactionFailed
from repos import enqueue
from repos.locking import RepositoryBusy
from repos.models import Push, Repository
from workspaces import cleanup, exports, following, refmigration
from workspaces.models import WorkspaceExport


def _push(push_id: int) -> Push | None:
    return Push.objects.select_related("repository", "pusher").filter(pk=push_id).first()


@shared_task(acks_late=True, ignore_result=True)
def follow_push(push_id: int) -> str:
    """After a push: its users' Workspace rows; then a workspace push is indexed by patch-id,
    and work merged by a branch move is cleaned up (workspaces.cleanup), each in its own task."""
    push = Push.objects.filter(pk=push_id).first()
    if push is None:
        return "gone"
    touched_workspaces, moved_branch = following.workspaces_follow_push(push=push)
    if touched_workspaces:
        enqueue.send("workspaces.tasks.index_workspace_push", push_id)
    if moved_branch:
        enqueue.send("workspaces.tasks.cleanup_after_push", push_id)
    return "done"


@shared_task(
    autoretry_for=(GitTimeout, RepositoryBusy, RefTransactionFailed),
    retry_backoff=10,
    max_retries=8,
    acks_late=True,
    ignore_result=True,
)
def migrate_nameless_layout(repository_id: int) -> str:
    """Rename one repository's nameless heads to the current layout (workspaces.refmigration);
    a push that moved one of them meanwhile fails the compare-and-swap, and the task retries."""
    repo = Repository.objects.filter(pk=repository_id).first()
    if repo is None:
        return "gone"
    return f"renamed {refmigration.repository_migrate_nameless(repo=repo)}"


@shared_task(acks_late=True, ignore_result=True)
def notify_archived_ref(repository_id: int, ref: str, sha: str) -> str:
    return (
        "notified" if following.archived_ref_notify(repository_id=repository_id, ref=ref, sha=sha) else "gone"
    )


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=30, max_retries=3, acks_late=True, ignore_result=True)
def index_workspace_push(push_id: int) -> str:
    push = _push(push_id)
    if push is None:
        return "gone"
    return f"indexed {cleanup.index_push(push)}"


@shared_task(
    autoretry_for=(GitTimeout, RepositoryBusy),
    retry_backoff=10,
    max_retries=5,
    acks_late=True,
    ignore_result=True,
)
def cleanup_after_push(push_id: int) -> str:
    push = _push(push_id)
    if push is None:
        return "gone"
    return f"archived {len(cleanup.cleanup_after_push(push))}"


@shared_task(ignore_result=True)
def expire_archived_refs() -> int:
    """Periodic (Celery beat): drop archive refs past WORKSPACE_ARCHIVE_DAYS."""
    return cleanup.expire_due()


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=30, max_retries=3, acks_late=True, ignore_result=True)
def notify_deleted_repository_contributors(repo_id: int) -> str:
    repo = Repository.objects.select_related("owner").filter(pk=repo_id, deleted_at__isnull=False).first()
    if repo is None:
        return "gone"  # restored or purged meanwhile
    return f"notified {len(exports.notify_contributors(repo))}"


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=30, max_retries=3, acks_late=True, ignore_result=True)
def build_workspace_export(export_id: int) -> str:
    export = (
        WorkspaceExport.objects.select_related("repository__owner", "user")
        .filter(pk=export_id, state=WorkspaceExport.State.PENDING)
        .first()
    )
    if export is None:
        return "gone"
    return exports.workspace_export_build(export=export).state
