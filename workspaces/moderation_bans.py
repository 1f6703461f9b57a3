"""Bans: from one repository (RepositoryBan: the pre-receive policy refuses every push there; the
workspace is frozen, and the unban lifts that freeze only if the ban set it) or from the whole
site (staff only: the account is deactivated, so sign-in, sessions, tokens, git and the API
refuse it)."""

from __future__ import annotations

from django.db import transaction

from repos.errors import Conflict, InvalidInput
from repos.models import AuditEntry, Repository
from workspaces.models import ModerationAction, RepositoryBan
from workspaces.moderation_common import audit, check_action, locked_workspace, notify_later, workspace_url


def do_ban_from_repository(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    reason = check_action(acting_user, repo, ModerationAction.BAN, reason)
    if user == repo.owner:
        raise InvalidInput("The repository's owner cannot be banned from it.")
    with transaction.atomic():
        _ban, created = RepositoryBan.objects.get_or_create(
            repository=repo, user=user, defaults={"created_by": acting_user, "reason": reason}
        )
        if not created:
            raise Conflict(f"{user.username} is already banned from {repo.full_name}.")
        ws = locked_workspace(repo, user)
        before = {"banned": False, **ws.flags}
        # Recorded on the row, so the unban lifts this freeze and never a moderator's own.
        if not ws.frozen:
            ws.frozen, ws.frozen_by_ban = True, True
            ws.save(update_fields=["frozen", "frozen_by_ban"])
        entry = audit(
            acting_user,
            ModerationAction.BAN,
            repo=repo,
            target=user,
            reason=reason,
            before=before,
            after={"banned": True, **ws.flags, "frozen_by_ban": ws.frozen_by_ban},
        )
        notify_later(
            user,
            kind="repository_ban",
            repo=repo,
            url=workspace_url(repo, user.username),
            text=f"You were banned from pushing to {repo.full_name} by a moderator: {reason}",
        )
    return entry


def do_unban_from_repository(*, repo: Repository, user, acting_user, reason: str) -> AuditEntry:
    reason = check_action(acting_user, repo, ModerationAction.UNBAN, reason)
    with transaction.atomic():
        deleted, _ = RepositoryBan.objects.filter(repository=repo, user=user).delete()
        if not deleted:
            raise Conflict(f"{user.username} is not banned from {repo.full_name}.")
        ws = locked_workspace(repo, user)
        before = {"banned": True, **ws.flags, "frozen_by_ban": ws.frozen_by_ban}
        if ws.frozen_by_ban:
            ws.frozen, ws.frozen_by_ban = False, False
            ws.save(update_fields=["frozen", "frozen_by_ban"])
        entry = audit(
            acting_user,
            ModerationAction.UNBAN,
            repo=repo,
            target=user,
            reason=reason,
            before=before,
            after={"banned": False, **ws.flags},
        )
        notify_later(
            user,
            kind="repository_unban",
            repo=repo,
            url=workspace_url(repo, user.username),
            text=f"You may push to {repo.full_name} again: {reason}",
        )
    return entry


def do_ban_from_site(*, user, acting_user, reason: str) -> AuditEntry:
    """Deactivate the account: sign-in, sessions, tokens (git and API) all refuse it."""
    reason = check_action(acting_user, None, ModerationAction.SITE_BAN, reason)
    if user == acting_user or user.is_staff:
        raise InvalidInput("Staff accounts cannot be banned from the site; remove staff status first.")
    with transaction.atomic():
        if not user.is_active:
            raise Conflict(f"{user.username} is already banned from the site.")
        user.is_active = False
        user.save(update_fields=["is_active"])
        entry = audit(
            acting_user,
            ModerationAction.SITE_BAN,
            repo=None,
            target=user,
            reason=reason,
            before={"is_active": True},
            after={"is_active": False},
        )
    return entry


def do_unban_from_site(*, user, acting_user, reason: str) -> AuditEntry:
    reason = check_action(acting_user, None, ModerationAction.SITE_UNBAN, reason)
    with transaction.atomic():
        if user.is_active:
            raise Conflict(f"{user.username} is not banned from the site.")
        user.is_active = True
        user.save(update_fields=["is_active"])
        entry = audit(
            acting_user,
            ModerationAction.SITE_UNBAN,
            repo=None,
            target=user,
            reason=reason,
            before={"is_active": False},
            after={"is_active": True},
        )
        notify_later(user, kind="site_unban", repo=None, text=f"Your account was reinstated: {reason}")
    return entry
