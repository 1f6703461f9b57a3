"""Moderation: act on one person's workspace without touching the project or anyone else.

One service per action, in the shape of Zulip's `do_*` actions: each checks who may act,
changes one flag of the workspace (and the refs in git, under the repository's lock), writes
its AuditEntry with every flag before and after in the same transaction, and notifies the
workspace's owner once it has committed. The flags are independent: hiding a frozen workspace
leaves it frozen.

- freeze / unfreeze: the owner can no longer push (the pre-receive policy refuses) nor add to
  the workspace from the web (restore an archived ref, open or update a proposal); still visible.
- hide / unhide: refs/users/<u>/ is not advertised or shown except to its owner, admins and
  staff (per-request hideRefs in workspaces.access.hiding; pages through selectors.visible_to).
- take down / lift take-down: the refs move to refs/takedown/<u>/ (and back) in one
  `update-ref --stdin` transaction; never advertised to anyone; the workspace accepts nothing.
  The take-down closes the workspace's open proposals in the same transaction (reviews listens
  to `workspace_taken_down`); lifting it reopens none. Staff only.
- purge: the user's refs in the repository are deleted (workspace, take-down and archive refs),
  then unreachable objects are pruned, so the content is gone unless another ref reaches it.
  Staff only.
- restore: clears every flag (taken-down refs move back); lifting a take-down is staff-only.
- ban: from one repository (RepositoryBan: the policy refuses every push; the workspace is
  frozen, and the unban lifts that freeze only if the ban set it) or from the whole site (staff
  only: the account is deactivated, so sign-in, tokens, git and the API refuse it).

Who: staff anywhere; a repository's admins in their own repository, except take-down, purge
and site bans. Maintainers cannot moderate.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import Signal

from gitcore.git import run_git
from repos import changelog
from repos.errors import Conflict, Forbidden
from repos.hooks import refspace
from repos.locking import repository_lock
from repos.maintenance import remove_unreachable_objects
from repos.models import AuditEntry, ChangeKind, Repository
from workspaces.models import FLAGS, ArchivedRef, ModerationAction, Workspace

# The bans, reports and shared checks live in their own modules; callers keep using this one.
from workspaces.moderation_bans import (  # noqa: F401
    do_ban_from_repository,
    do_ban_from_site,
    do_unban_from_repository,
    do_unban_from_site,
)
from workspaces.moderation_common import (  # noqa: F401
    REASON_MAX,
    STAFF_ONLY,
    audit,
    check_action,
    is_staff,
    locked_workspace,
    may_moderate,
    notify_later,
    workspace_url,
)
from workspaces.moderation_reports import report_close, report_create  # noqa: F401
from workspaces.signals import workspace_moderated
from workspaces.visibility.rule import TAKEDOWN

# Sent inside the take-down's transaction (sender=Workspace; workspace, acting_user, reason).
# Receivers close what the workspace offered elsewhere and return a list of what they closed,
# for the audit row; an exception rolls the take-down back.
workspace_taken_down = Signal()


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
        lines.append(f"create {dst}{ref[len(src) :]} {oid}")
        lines.append(f"delete {ref} {oid}")
    result = run_git(
        ["update-ref", "--stdin"],
        repo=repo.disk_path,
        input="".join(f"{line}\n" for line in lines).encode(),
        check=False,
    )
    if result.returncode != 0:
        raise Conflict(
            "The workspace's refs changed while they were being moved; try again. "
            + result.stderr.decode("utf-8", "replace").strip()[:300]
        )
    return refs


def _change_flags(
    *, actor, repo: Repository, user, action: str, flags: dict[str, bool], reason: str, verb: str
) -> AuditEntry:
    """Set the given flags; Conflict (nothing changes) if they are already so. Setting or
    clearing `taken_down` moves the refs, decided under the lock from the row as it is then."""
    reason = check_action(actor, repo, action, reason)
    with repository_lock(repo.pk, purpose=f"moderation {action}"), transaction.atomic():
        ws = locked_workspace(repo, user)
        before: dict[str, Any] = ws.flags
        # A freeze over a ban's freeze still counts: it makes the freeze the moderator's.
        if all(before[name] == value for name, value in flags.items()) and not (
            flags.get("frozen") and ws.frozen_by_ban
        ):
            raise Conflict(_unchanged(user, flags))
        if ws.taken_down and not flags.get("taken_down", True) and not is_staff(actor):
            raise Forbidden("Only site staff may restore a workspace that was taken down.")
        move = None
        if "taken_down" in flags and flags["taken_down"] != ws.taken_down:
            move = _takedown_move(user, back=not flags["taken_down"])
        closed = []
        if flags.get("taken_down") and not ws.taken_down:
            for _receiver, result in workspace_taken_down.send(
                sender=Workspace, workspace=ws, acting_user=actor, reason=reason
            ):
                closed += list(result or [])
        moved = _move_refs(repo, *move) if move else {}
        if moved:
            # Only a take-down or its lifting moves refs; freeze and hide change no ref (the
            # replicas read those flags from the database): they append nothing to the log.
            down = bool(flags.get("taken_down"))
            changelog.record(
                repo.pk,
                ChangeKind.TAKEDOWN if down else ChangeKind.MODERATION,
                actor=actor,
                summary=f"{len(moved)} ref(s) of {user.username}'s workspace moved "
                f"{'out of reach by a take-down' if down else 'back after its take-down'}",
            )
        for name, value in flags.items():
            setattr(ws, name, value)
        # An explicit freeze or unfreeze is the moderator's; a later unban leaves it alone.
        if "frozen" in flags:
            ws.frozen_by_ban = False
        ws.save(update_fields=[*flags, "frozen_by_ban"])
        before, after = dict(before), dict[str, Any](ws.flags)
        if move:
            before["refs"] = moved
            after["refs"] = {move[1] + ref[len(move[0]) :]: oid for ref, oid in moved.items()}
        if closed:
            after["proposals_closed"] = closed
        entry = audit(actor, action, repo=repo, target=user, reason=reason, before=before, after=after)
        notify_later(
            user,
            kind=f"workspace_{action}",
            repo=repo,
            url=workspace_url(repo, user.username),
            text=f"Your workspace on {repo.full_name} was {verb} by a moderator: {reason}",
        )
        if "hidden" in flags or "taken_down" in flags:
            _moderated_later(repo, user, action)
    return entry


def _moderated_later(repo: Repository, user, action: str) -> None:
    repo_id, username = repo.pk, user.username
    transaction.on_commit(
        lambda: workspace_moderated.send_robust(
            sender=Workspace, repository_id=repo_id, username=username, action=action
        )
    )


def _unchanged(user, flags: dict[str, bool]) -> str:
    if len(flags) > 1:
        return f"{user.username}'s workspace is not frozen, hidden or taken down."
    ((name, value),) = flags.items()
    return f"{user.username}'s workspace is {'already' if value else 'not'} {name.replace('_', ' ')}."


def _takedown_move(user, *, back: bool = False) -> tuple[str, str]:
    name = user.username
    pair = (refspace.workspace_prefix(name), f"{TAKEDOWN}{name}/")
    return (pair[1], pair[0]) if back else pair


def do_freeze_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.FREEZE,
        flags={"frozen": True},
        reason=reason,
        verb="frozen (pushes are refused)",
    )


def do_unfreeze_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.UNFREEZE,
        flags={"frozen": False},
        reason=reason,
        verb="unfrozen",
    )


def do_hide_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.HIDE,
        flags={"hidden": True},
        reason=reason,
        verb="hidden from everyone but you and admins",
    )


def do_unhide_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.UNHIDE,
        flags={"hidden": False},
        reason=reason,
        verb="made visible again",
    )


def do_take_down_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    """Move the refs out of reach and close the workspace's open proposals, in one transaction."""
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.TAKE_DOWN,
        flags={"taken_down": True},
        reason=reason,
        verb="taken down",
    )


def do_lift_take_down(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    """The refs move back; the other flags and the closed proposals stay as they are."""
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.LIFT_TAKE_DOWN,
        flags={"taken_down": False},
        reason=reason,
        verb="restored after its take-down",
    )


def do_restore_workspace(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    """Clear every flag (taken-down refs move back). Lifting a take-down is staff-only, as the
    take-down was; proposals it closed stay closed."""
    return _change_flags(
        actor=acting_user,
        repo=repo,
        user=user,
        action=ModerationAction.RESTORE,
        flags=dict.fromkeys(FLAGS, False),
        reason=reason,
        verb="restored",
    )


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
    reason = check_action(acting_user, repo, ModerationAction.PURGE, reason)
    name = user.username
    path = repo.disk_path
    with repository_lock(repo.pk, purpose="moderation purge", timeout=600):
        refs = {}
        for prefix in (refspace.workspace_prefix(name), f"{TAKEDOWN}{name}/", refspace.archive_prefix(name)):
            refs.update(_refs(repo, prefix))
        with transaction.atomic():
            ws = locked_workspace(repo, user)
            if refs:
                lines = "".join(f"delete {ref} {oid}\n" for ref, oid in sorted(refs.items()))
                result = run_git(["update-ref", "--stdin"], repo=path, input=lines.encode(), check=False)
                if result.returncode != 0:
                    raise Conflict("The workspace's refs changed while they were being purged; try again.")
            ArchivedRef.objects.filter(
                repository=repo, username=name, state=ArchivedRef.State.ARCHIVED
            ).update(state=ArchivedRef.State.EXPIRED)
            # Logged even with no ref left: the prune below drops what earlier deletions left
            # unreachable, and every replica must do the same and confirm it.
            changelog.record(repo.pk, ChangeKind.PURGE, actor=acting_user, summary=_purged(name, refs))
            # The flags stay: a taken-down workspace stays closed to pushes after its purge.
            entry = audit(
                acting_user,
                ModerationAction.PURGE,
                repo=repo,
                target=user,
                reason=reason,
                before={**ws.flags, "refs": refs},
                after={**ws.flags, "refs": {}},
            )
            notify_later(
                user,
                kind="workspace_purge",
                repo=repo,
                url="",
                text=f"Your workspace refs on {repo.full_name} were deleted by a moderator: {reason}",
            )
            _moderated_later(repo, user, ModerationAction.PURGE)
        # Outside the transaction (a repack can take minutes; the database must not wait), still
        # under the lock, so no merge or cleanup moves refs meanwhile.
        remove_unreachable_objects(path)
    return entry


def _purged(name: str, refs: dict[str, str]) -> str:
    kinds = [
        f"{sum(ref.startswith(prefix) for ref in refs)} {label}"
        for prefix, label in (
            (refspace.workspace_prefix(name), "workspace"),
            (f"{TAKEDOWN}{name}/", "taken-down"),
            (refspace.archive_prefix(name), "archived"),
        )
    ]
    return (
        f"purged {name}'s refs ({', '.join(kinds)}) and the objects only they reached; "
        "reflogs expired, unreachable objects pruned"
    )
