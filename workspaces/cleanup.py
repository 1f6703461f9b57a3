"""Merged work leaves the workspaces by itself, and nothing is lost.

After every push (or merge, which is recorded as one) that moves a canonical branch, a Celery
task finds the workspace refs whose work has just landed on that branch (workspaces.landing:
merged, rebased or squashed) and archives them.

Deletion is compare-and-delete in one git transaction per ref: the ref is deleted only if it
still points where it was checked, and the commit moves to a hidden `refs/archive/<user>/<id>`
(never advertised) in the same transaction. ArchivedRef records who, when and why; the owner
can restore it until the retention period ends, after which a periodic task drops the archive
ref. All of it runs under the repository's lock (repos.locking), as merges and maintenance do.
"""

from __future__ import annotations

import functools
import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from gitcore.git import GitError, is_valid_refname
from gitcore.gittools import RefTransaction, RefTransactionFailed, is_zero, ref_exists
from repos import changelog
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.hooks import refspace
from repos.locking import repository_lock
from repos.models import ChangeKind, Push, Repository, Role
from repos.selectors import role_for
from workspaces.landing import Landed, find_landed, index_push
from workspaces.models import ArchivedRef, PatchId
from workspaces.selectors import workspace_settings
from workspaces.signals import workspace_ref_archived

log = logging.getLogger(__name__)


def _index_recent(repo: Repository) -> None:
    """Index workspace pushes the indexing task has not reached yet (it may run behind)."""
    since = timezone.now() - timedelta(days=1)
    indexed = PatchId.objects.filter(repository=repo, push__created_at__gte=since).values("push_id")
    pending = (
        Push.objects.filter(repository=repo, touches_workspace=True, created_at__gte=since)
        .exclude(pk__in=indexed)
        .order_by("-pk")[:200]
    )
    for push in pending:
        try:
            index_push(push)
        except GitError:
            log.exception("could not index push #%s", push.pk)


# --- deleting and restoring -----------------------------------------------------------------------


def _archive_ref(username: str) -> str:
    return f"{refspace.archive_prefix(username)}{timezone.now():%Y%m%d%H%M%S}-{uuid.uuid4().hex[:12]}"


def _applied(tx: RefTransaction) -> bool:
    """Commit the transaction; False (and a log line saying why) if a ref was not where expected."""
    try:
        tx.commit()
    except RefTransactionFailed as exc:
        log.info("ref transaction refused: %s", exc.stderr.strip()[:500])
        return False
    return True


def archive_landed(
    repo: Repository, branch: str, landed: list[Landed], *, push: Push | None, deleted_by=None
) -> list[ArchivedRef]:
    """Compare-and-delete each ref into refs/archive/, and record it. A ref that moved since it
    was checked stays (its transaction fails alone). `deleted_by`: who asked, when no push did
    (an owner cleaning up stale refs, workspaces.stale)."""
    path = repo.disk_path
    expires = timezone.now() + timedelta(days=settings.WORKSPACE_ARCHIVE_DAYS)
    what = {
        "merged": "merged into",
        "rebased": "rebased onto",
        "squashed": "squashed into",
        "stale": "already on",
    }
    archives = {item.ref: _archive_ref(item.username) for item in landed}

    def steps(tx: RefTransaction, item: Landed) -> RefTransaction:
        return tx.create(archives[item.ref], item.sha).delete(item.ref, old=item.sha)

    # All in one transaction; if any ref moved meanwhile, each on its own, so the others go.
    together = RefTransaction(path)
    for item in landed:
        steps(together, item)
    if landed and _applied(together):
        done = landed
    else:
        done = [item for item in landed if _applied(steps(RefTransaction(path), item))]
    where = f" in push #{push.pk}" if push else ""
    if push is None and deleted_by is not None:
        where = f", cleaned up by {deleted_by.username}"
    rows = [
        ArchivedRef(
            repository=repo,
            username=item.username,
            ref=item.ref,
            sha=item.sha,
            archive_ref=archives[item.ref],
            branch=branch,
            how=item.how,
            reason=f"{what[item.how]} {branch}{where}",
            push=push,
            deleted_by=push.pusher if push else deleted_by,
            expires_at=expires,
        )
        for item in done
    ]
    with transaction.atomic():
        created = ArchivedRef.objects.bulk_create(rows)
        if created:
            changelog.record(
                repo.pk,
                ChangeKind.CLEANUP,
                actor=rows[0].deleted_by,
                summary=f"archived {len(created)} workspace ref(s) {what[done[0].how]} {branch}{where}: "
                + ", ".join(row.ref for row in created[:3]),
            )
        for row in created:
            transaction.on_commit(
                functools.partial(
                    workspace_ref_archived.send,
                    sender=ArchivedRef,
                    repository_id=repo.pk,
                    ref=row.ref,
                    sha=row.sha,
                    push_id=row.push_id,
                    reason=row.reason,
                )
            )
    return created


def cleanup_after_push(push: Push) -> list[ArchivedRef]:
    """Archive the workspace refs each canonical branch update of this push landed."""
    repo = push.repository
    updates = [u for u in push.ref_updates.all() if u.ref.startswith("refs/heads/") and not is_zero(u.new)]
    if not updates or not workspace_settings(repo).delete_merged_refs:
        return []
    archived = []
    with repository_lock(repo.pk, purpose=f"cleanup after push #{push.pk}", timeout=settings.GIT_TIMEOUT):
        _index_recent(repo)
        for update in updates:
            branch = update.ref.removeprefix("refs/heads/")
            landed = find_landed(repo, branch, update.old, update.new)
            archived += archive_landed(repo, branch, landed, push=push)
    if archived:
        log.info(
            "archived %d merged workspace refs in %s after push #%s", len(archived), repo.full_name, push.pk
        )
    return archived


def restore(archived: ArchivedRef, *, user, name: str | None = None) -> str:
    """Bring an archived ref back (under its old name, or `name` in the same workspace)."""
    repo = archived.repository
    if user is None or not (user.username == archived.username or role_for(user, repo) == Role.ADMIN):
        raise Forbidden("only the workspace's owner or a repository admin can restore its refs")
    if archived.state != ArchivedRef.State.ARCHIVED:
        raise Conflict(f"this ref was already {archived.state}")
    prefix = refspace.workspace_prefix(archived.username)
    ref = archived.ref if not name else prefix + name.strip().removeprefix(prefix)
    if not ref.startswith(prefix) or not is_valid_refname(ref) or len(ref.encode()) > 255:
        raise InvalidInput(f"{ref!r} is not a valid ref name in {archived.username}'s workspace")
    with repository_lock(repo.pk, purpose=f"restore {ref}", timeout=30):
        # `create` fails if the ref exists: restoring never overwrites newer work.
        ok = _applied(
            RefTransaction(repo.disk_path)
            .create(ref, archived.sha)
            .delete(archived.archive_ref, old=archived.sha)
        )
        if not ok:
            raise Conflict(f"{ref} exists (or the archive moved): restore it under another name")
        with transaction.atomic():
            ArchivedRef.objects.filter(pk=archived.pk).update(
                state=ArchivedRef.State.RESTORED, restored_at=timezone.now(), restored_by=user, ref=ref
            )
            changelog.record(
                repo.pk, ChangeKind.RESTORE, actor=user, summary=f"restored {ref} from {archived.archive_ref}"
            )
    return ref


def expire_due(now=None) -> int:
    """Drop archive refs past their retention period (the periodic task)."""
    now = now or timezone.now()
    expired = 0
    due = ArchivedRef.objects.filter(state=ArchivedRef.State.ARCHIVED, expires_at__lte=now).select_related(
        "repository"
    )[:1000]
    for row in due:
        with repository_lock(row.repository_id, purpose="expire archived refs", timeout=settings.GIT_TIMEOUT):
            path = row.repository.disk_path
            gone = _applied(RefTransaction(path).delete(row.archive_ref, old=row.sha))
            if gone or not ref_exists(path, row.archive_ref):
                with transaction.atomic():
                    ArchivedRef.objects.filter(pk=row.pk).update(state=ArchivedRef.State.EXPIRED)
                    if gone:  # an archive ref already missing changed nothing now
                        changelog.record(
                            row.repository_id,
                            ChangeKind.CLEANUP,
                            summary=f"expired {row.archive_ref} (archived {row.ref})",
                        )
                expired += 1
    return expired
