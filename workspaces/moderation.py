"""Moderation: act on one person's workspace without touching the project or anyone else.

One service per action, in the shape of Zulip's `do_*` actions: each checks who may act,
changes the state (and the refs in git, under the repository's lock), writes its AuditEntry
in the same transaction, and notifies the workspace's owner once it has committed.

- freeze: the owner can no longer push (the pre-receive policy refuses); still visible.
- hide: refs/users/<u>/ is not advertised or shown except to its owner, admins and staff
  (per-request hideRefs in workspaces.gitconfig; pages through selectors.visible_to).
- take down: the refs move to refs/takedown/<u>/ in one `update-ref --stdin` transaction;
  never advertised to anyone; the workspace accepts no pushes. Staff only.
- purge: the user's refs in the repository are deleted (workspace, take-down and archive refs),
  then unreachable objects are pruned, so the content is gone unless another ref reaches it.
  Staff only.
- restore: back to active; taken-down refs move back.
- ban: from one repository (RepositoryBan: the policy refuses every push; the workspace is
  frozen) or from the whole site (staff only: the account is deactivated, so sign-in, tokens,
  git and the API refuse it).

Who: staff anywhere; a repository's admins in their own repository, except take-down, purge
and site bans. Maintainers cannot moderate.
"""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from notifications.services import notify
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.git import run_git
from repos.locking import repository_lock
from repos.models import Repository, Role
from repos.selectors import role_for
from workspaces.gitconfig import TAKEDOWN
from workspaces.models import (
    ArchivedRef,
    AuditEntry,
    ModerationAction,
    Report,
    RepositoryBan,
    Workspace,
    WorkspaceState,
)

REASON_MAX = 2000
STAFF_ONLY = {ModerationAction.TAKE_DOWN, ModerationAction.PURGE, ModerationAction.SITE_BAN,
              ModerationAction.SITE_UNBAN}


def is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def may_moderate(user, repo: Repository | None, action: str = ModerationAction.FREEZE) -> bool:
    if is_staff(user):
        return True
    if repo is None or action in STAFF_ONLY or getattr(repo, "deleted_at", None) is not None:
        return False
    return role_for(user, repo) == Role.ADMIN


def _check(actor, repo, action: str, reason: str) -> str:
    if not may_moderate(actor, repo, action):
        who = "site staff" if action in STAFF_ONLY else "site staff and the repository's admins"
        raise Forbidden(f"Only {who} may {action.replace('_', ' ')} here.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say why: a reason is required.", fields={"reason": ["This field is required."]})
    if len(reason) > REASON_MAX:
        raise InvalidInput(f"The reason is longer than {REASON_MAX} characters.", fields={"reason": ["Too long."]})
    return reason


def _audit(actor, action: str, *, repo, target, workspace=None, reason: str, before: dict, after: dict) -> AuditEntry:
    return AuditEntry.objects.create(actor=actor, action=action, repository=repo, target_user=target,
                                     workspace=workspace, reason=reason, before=before, after=after)


def _workspace_url(repo: Repository, username: str) -> str:
    return reverse("workspace-user", args=[repo.owner.username, repo.name, username])


def _notify_later(user, *, kind: str, text: str, repo: Repository | None, url: str = "") -> None:
    transaction.on_commit(lambda: notify(user, kind=kind, text=text, url=url, repository=repo))


def _workspace(repo: Repository, user) -> Workspace:
    ws, _ = Workspace.objects.select_for_update().get_or_create(repository=repo, user=user)
    return ws


def _refs(repo: Repository, prefix: str) -> dict[str, str]:
    out = run_git(["for-each-ref", "--format=%(objectname) %(refname)", prefix], repo=repo.disk_path).text
    return {ref: oid for oid, _, ref in (line.partition(" ") for line in out.splitlines())}


def _move_refs(repo: Repository, src: str, dst: str) -> dict[str, str]:
    """Every ref under `src` to the same name under `dst`, in one transaction that checks each
    ref is still where it was read (a concurrent push fails it: nothing moves)."""
    refs = _refs(repo, src)
    if not refs:
        return {}
    lines = []
    for ref, oid in sorted(refs.items()):
        lines.append(f"create {dst}{ref[len(src):]} {oid}")
        lines.append(f"delete {ref} {oid}")
    result = run_git(["update-ref", "--stdin"], repo=repo.disk_path,
                     input="".join(f"{line}\n" for line in lines).encode(), check=False)
    if result.returncode != 0:
        raise Conflict("The workspace's refs changed while they were being moved; try again. "
                       + result.stderr.decode("utf-8", "replace").strip()[:300])
    return refs


def _set_state(*, actor, repo: Repository, user, action: str, state: str, reason: str, verb: str,
               move: tuple[str, str] | None = None) -> AuditEntry:
    reason = _check(actor, repo, action, reason)
    with repository_lock(repo.pk, purpose=f"moderation {action}"), transaction.atomic():
        ws = _workspace(repo, user)
        before = {"state": ws.state}
        if ws.state == state:
            raise Conflict(f"{user.username}'s workspace is already {ws.get_state_display()}.")
        moved = _move_refs(repo, *move) if move else {}
        ws.state = state
        ws.save(update_fields=["state"])
        after = {"state": state}
        if move:
            before["refs"] = moved
            after["refs"] = {move[1] + ref[len(move[0]):]: oid for ref, oid in moved.items()}
        entry = _audit(actor, action, repo=repo, target=user, workspace=ws, reason=reason, before=before, after=after)
        _notify_later(user, kind=f"workspace_{action}", repo=repo, url=_workspace_url(repo, user.username),
                      text=f"Your workspace on {repo.full_name} was {verb} by a moderator: {reason}")
    return entry


def do_freeze_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _set_state(actor=acting_user, repo=repo, user=user, action=ModerationAction.FREEZE,
                      state=WorkspaceState.FROZEN, reason=reason, verb="frozen (pushes are refused)")


def do_hide_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _set_state(actor=acting_user, repo=repo, user=user, action=ModerationAction.HIDE,
                      state=WorkspaceState.HIDDEN, reason=reason, verb="hidden from everyone but you and admins")


def do_take_down_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    name = user.username
    return _set_state(actor=acting_user, repo=repo, user=user, action=ModerationAction.TAKE_DOWN,
                      state=WorkspaceState.TAKEN_DOWN, reason=reason, verb="taken down",
                      move=(f"refs/users/{name}/", f"{TAKEDOWN}{name}/"))


def do_restore_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    """Undo a freeze, hide or take-down (taken-down refs move back). Restoring a take-down is
    staff-only, as the take-down was."""
    ws = Workspace.objects.filter(repository=repo, user=user).first()
    if ws is None or ws.state == WorkspaceState.ACTIVE:
        raise Conflict(f"{user.username}'s workspace is not frozen, hidden or taken down.")
    if ws.state == WorkspaceState.TAKEN_DOWN and not is_staff(acting_user):
        raise Forbidden("Only site staff may restore a workspace that was taken down.")
    name = user.username
    move = (f"{TAKEDOWN}{name}/", f"refs/users/{name}/") if ws.state == WorkspaceState.TAKEN_DOWN else None
    return _set_state(actor=acting_user, repo=repo, user=user, action=ModerationAction.RESTORE,
                      state=WorkspaceState.ACTIVE, reason=reason, verb="restored", move=move)


def do_purge_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    """Delete every ref of the user's in the repository (workspace, take-down and archive
    refs), their reflogs, and the objects nothing else reaches any more.

    Objects another ref still reaches (a branch the work was merged into, someone else's
    workspace built on it) stay: they are part of that other history. Deleting a ref deletes
    its reflog; `reflog expire --expire-unreachable=now --all` drops entries of other refs'
    reflogs (a branch that once pointed at the work) that are no longer reachable from their
    tip. The repack then drops unreachable objects at once (`--cruft-expiration=now`), and
    `prune` any loose ones.
    """
    reason = _check(acting_user, repo, ModerationAction.PURGE, reason)
    name = user.username
    path = repo.disk_path
    with repository_lock(repo.pk, purpose="moderation purge", timeout=600):
        refs = {}
        for prefix in (f"refs/users/{name}/", f"{TAKEDOWN}{name}/", f"refs/archive/{name}/"):
            refs.update(_refs(repo, prefix))
        with transaction.atomic():
            ws = _workspace(repo, user)
            if refs:
                lines = "".join(f"delete {ref} {oid}\n" for ref, oid in sorted(refs.items()))
                result = run_git(["update-ref", "--stdin"], repo=path, input=lines.encode(), check=False)
                if result.returncode != 0:
                    raise Conflict("The workspace's refs changed while they were being purged; try again.")
            ArchivedRef.objects.filter(repository=repo, username=name, state=ArchivedRef.State.ARCHIVED).update(
                state=ArchivedRef.State.EXPIRED)
            # The state stays: a taken-down workspace stays closed to pushes after its purge.
            entry = _audit(acting_user, ModerationAction.PURGE, repo=repo, target=user, workspace=ws, reason=reason,
                           before={"state": ws.state, "refs": refs}, after={"state": ws.state, "refs": {}})
            _notify_later(user, kind="workspace_purge", repo=repo, url="",
                          text=f"Your workspace refs on {repo.full_name} were deleted by a moderator: {reason}")
        # Outside the transaction (a repack can take minutes; the database must not wait), still
        # under the lock, so no merge or cleanup moves refs meanwhile.
        run_git(["reflog", "expire", "--expire-unreachable=now", "--all"], repo=path)
        run_git(["repack", "-a", "-d", "-b", "--cruft", "--cruft-expiration=now", "--quiet"], repo=path, timeout=3600)
        run_git(["prune", "--expire=now"], repo=path, timeout=3600)
        run_git(["commit-graph", "write", "--reachable"], repo=path)
    return entry


def do_ban_from_repository(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    reason = _check(acting_user, repo, ModerationAction.BAN, reason)
    if user == repo.owner:
        raise InvalidInput("The repository's owner cannot be banned from it.")
    with transaction.atomic():
        _ban, created = RepositoryBan.objects.get_or_create(
            repository=repo, user=user, defaults={"created_by": acting_user, "reason": reason})
        if not created:
            raise Conflict(f"{user.username} is already banned from {repo.full_name}.")
        ws = _workspace(repo, user)
        before = {"banned": False, "state": ws.state}
        if ws.state == WorkspaceState.ACTIVE:
            ws.state = WorkspaceState.FROZEN
            ws.save(update_fields=["state"])
        entry = _audit(acting_user, ModerationAction.BAN, repo=repo, target=user, workspace=ws, reason=reason,
                       before=before, after={"banned": True, "state": ws.state})
        _notify_later(user, kind="repository_ban", repo=repo, url=_workspace_url(repo, user.username),
                      text=f"You were banned from pushing to {repo.full_name} by a moderator: {reason}")
    return entry


def do_unban_from_repository(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    reason = _check(acting_user, repo, ModerationAction.UNBAN, reason)
    with transaction.atomic():
        deleted, _ = RepositoryBan.objects.filter(repository=repo, user=user).delete()
        if not deleted:
            raise Conflict(f"{user.username} is not banned from {repo.full_name}.")
        ws = _workspace(repo, user)
        before = {"banned": True, "state": ws.state}
        if ws.state == WorkspaceState.FROZEN:
            ws.state = WorkspaceState.ACTIVE
            ws.save(update_fields=["state"])
        entry = _audit(acting_user, ModerationAction.UNBAN, repo=repo, target=user, workspace=ws, reason=reason,
                       before=before, after={"banned": False, "state": ws.state})
        _notify_later(user, kind="repository_unban", repo=repo, url=_workspace_url(repo, user.username),
                      text=f"You may push to {repo.full_name} again: {reason}")
    return entry


def do_ban_from_site(*, user, acting_user, reason: str) -> AuditEntry:
    """Deactivate the account: sign-in, sessions, tokens (git and API) all refuse it."""
    reason = _check(acting_user, None, ModerationAction.SITE_BAN, reason)
    if user == acting_user or user.is_staff:
        raise InvalidInput("Staff accounts cannot be banned from the site; remove staff status first.")
    with transaction.atomic():
        if not user.is_active:
            raise Conflict(f"{user.username} is already banned from the site.")
        user.is_active = False
        user.save(update_fields=["is_active"])
        entry = _audit(acting_user, ModerationAction.SITE_BAN, repo=None, target=user, reason=reason,
                       before={"is_active": True}, after={"is_active": False})
    return entry


def do_unban_from_site(*, user, acting_user, reason: str) -> AuditEntry:
    reason = _check(acting_user, None, ModerationAction.SITE_UNBAN, reason)
    with transaction.atomic():
        if user.is_active:
            raise Conflict(f"{user.username} is not banned from the site.")
        user.is_active = True
        user.save(update_fields=["is_active"])
        entry = _audit(acting_user, ModerationAction.SITE_UNBAN, repo=None, target=user, reason=reason,
                       before={"is_active": False}, after={"is_active": True})
        _notify_later(user, kind="site_unban", repo=None, text=f"Your account was reinstated: {reason}")
    return entry


# --- reports ------------------------------------------------------------------------------------


def report_create(*, repo: Repository, target_user, reporter, reason: str) -> Report:
    if reporter is None or not reporter.is_authenticated:
        raise Forbidden("Sign in to report a workspace.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say what is wrong: a reason is required.", fields={"reason": ["This field is required."]})
    if len(reason) > REASON_MAX:
        raise InvalidInput(f"The reason is longer than {REASON_MAX} characters.", fields={"reason": ["Too long."]})
    return Report.objects.create(repository=repo, target_user=target_user, reporter=reporter, reason=reason)


@transaction.atomic
def report_close(*, report: Report, acting_user, resolved: bool, reason: str = "") -> Report:
    """Close a report: resolved (an action was taken) or dismissed (with an audit row)."""
    if not may_moderate(acting_user, report.repository):
        raise Forbidden("Only site staff and the repository's admins may close reports.")
    report = Report.objects.select_for_update().get(pk=report.pk)
    if report.state != Report.State.OPEN:
        raise Conflict("The report is already closed.")
    report.state = Report.State.RESOLVED if resolved else Report.State.DISMISSED
    report.closed_by, report.closed_at = acting_user, timezone.now()
    report.save(update_fields=["state", "closed_by", "closed_at"])
    if not resolved:
        _audit(acting_user, ModerationAction.DISMISS_REPORT, repo=report.repository, target=report.target_user,
               reason=(reason or "").strip()[:REASON_MAX] or "dismissed",
               before={"report": report.pk, "state": "open"}, after={"report": report.pk, "state": report.state})
    return report
