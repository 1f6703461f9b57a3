"""Reads for moderation: the reports queue and the audit log, filtered."""

from __future__ import annotations

from django.db.models import QuerySet

from repos.models import Repository
from workspaces.models import AuditEntry, Report


def reports_queue(*, repo: Repository | None = None, state: str | None = Report.State.OPEN) -> QuerySet[Report]:
    rows = Report.objects.select_related("repository", "repository__owner", "target_user", "reporter")
    if repo is not None:
        rows = rows.filter(repository=repo)
    return rows.filter(state=state) if state else rows


def audit_log(*, repo: Repository | None = None, repository: str = "", user: str = "",
              action: str = "") -> QuerySet[AuditEntry]:
    """Entries, newest first; `repository` is "owner/name", `user` the target's or the actor's
    username."""
    rows = AuditEntry.objects.select_related("actor", "target_user", "repository", "repository__owner")
    if repo is not None:
        rows = rows.filter(repository=repo)
    if repository:
        owner, _, name = repository.partition("/")
        rows = rows.filter(repository__owner__username=owner, repository__name__iexact=name)
    if user:
        from django.db.models import Q

        rows = rows.filter(Q(target_user__username=user) | Q(actor__username=user))
    if action:
        rows = rows.filter(action=action)
    return rows
