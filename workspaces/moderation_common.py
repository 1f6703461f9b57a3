"""What every moderation action shares: who may act, the reason it needs, its audit row and the
owner's notification (workspaces.moderation, moderation_bans and moderation_reports use it)."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse

from notifications.services import notify
from repos.audit import record_audit
from repos.errors import Forbidden, InvalidInput
from repos.models import AuditEntry, Repository, Role
from repos.selectors import role_for
from workspaces.models import ModerationAction, Workspace

REASON_MAX = 2000
STAFF_ONLY = {
    ModerationAction.TAKE_DOWN,
    ModerationAction.LIFT_TAKE_DOWN,
    ModerationAction.PURGE,
    ModerationAction.SITE_BAN,
    ModerationAction.SITE_UNBAN,
    ModerationAction.BLOCK_CONTENT,
    ModerationAction.UNBLOCK_CONTENT,
}


def is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def may_moderate(user, repo: Repository | None, action: str = ModerationAction.FREEZE) -> bool:
    if is_staff(user):
        return True
    if repo is None or action in STAFF_ONLY or getattr(repo, "deleted_at", None) is not None:
        return False
    return role_for(user, repo) == Role.ADMIN


def check_action(actor, repo, action: str, reason: str) -> str:
    if not may_moderate(actor, repo, action):
        who = "site staff" if action in STAFF_ONLY else "site staff and the repository's admins"
        raise Forbidden(f"Only {who} may {action.replace('_', ' ')} here.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("Say why: a reason is required.", fields={"reason": ["This field is required."]})
    if len(reason) > REASON_MAX:
        raise InvalidInput(
            f"The reason is longer than {REASON_MAX} characters.", fields={"reason": ["Too long."]}
        )
    return reason


def audit(actor, action: str, *, repo, target, reason: str, before: dict, after: dict) -> AuditEntry:
    # The workspace acted on is (repository, target user): the row names both.
    return record_audit(
        actor=actor,
        action=action,
        repository=repo,
        target_user=target,
        reason=reason,
        before=before,
        after=after,
    )


def workspace_url(repo: Repository, username: str) -> str:
    return reverse("workspace-user", args=[repo.owner.username, repo.name, username])


def notify_later(user, *, kind: str, text: str, repo: Repository | None, url: str = "") -> None:
    transaction.on_commit(lambda: notify(user, kind=kind, text=text, url=url, repository=repo))


def locked_workspace(repo: Repository, user) -> Workspace:
    ws, _ = Workspace.objects.select_for_update().get_or_create(repository=repo, user=user)
    return ws
