"""The audit log's one writer: every staff or admin action on someone else's work (a
repository transfer, rename, delete or restore, a member or visibility change, a ref removed,
the moderation actions) records who did what, to what, and why, in the transaction of the
change itself, so the row exists exactly when the change does."""

from __future__ import annotations

from typing import Any

from django.db import models, transaction

from repos.models import AuditEntry, Repository, User


class Action(models.TextChoices):
    """The repos-level actions; apps add their own (workspaces.models.ModerationAction)."""

    TRANSFER = "transfer"
    RENAME = "rename"
    DELETE = "delete"
    RESTORE = "restore_repository"
    MEMBER_SET = "member_set"
    MEMBER_REMOVE = "member_remove"
    VISIBILITY = "visibility"
    REF_REMOVE = "ref_remove"


@transaction.atomic
def record_audit(
    *,
    actor: User | None,
    action: str,
    repository: Repository | None = None,
    target_user: User | None = None,
    reason: str = "",
    detail: dict[str, Any] | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditEntry:
    """Write one row. `detail` keeps what the row must still say once its repository or
    users are gone (names as they were); `before`/`after` the state an action changed."""
    detail = dict(detail or {})
    if repository is not None:
        detail.setdefault("repository", repository.full_name)
    return AuditEntry.objects.create(
        actor=actor if actor is not None and actor.pk else None,
        action=action,
        repository=repository,
        target_user=target_user,
        reason=reason or "",
        detail=detail,
        before=before or {},
        after=after or {},
    )
