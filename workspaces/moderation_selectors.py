"""Reads for moderation: the reports queue and the audit log, filtered."""

from __future__ import annotations

from django.db.models import QuerySet

from repos.models import AuditEntry, Repository
from workspaces.models import FLAGS, Report, Workspace


def reports_queue(
    *, repo: Repository | None = None, state: str | None = Report.State.OPEN
) -> QuerySet[Report]:
    rows = Report.objects.select_related("repository", "repository__owner", "target_user", "reporter")
    if repo is not None:
        rows = rows.filter(repository=repo)
    return rows.filter(state=state) if state else rows


def with_flags(reports) -> list[Report]:
    """The reports, each with its workspace's flags as `flags` (dict) and `flag_labels`, so the
    queue shows what is already done to each workspace (one query)."""
    reports = list(reports)
    keys = {(r.repository_id, r.target_user_id) for r in reports}
    rows = {}
    if keys:
        for ws in Workspace.objects.filter(
            repository_id__in={k[0] for k in keys}, user_id__in={k[1] for k in keys}
        ):
            rows[(ws.repository_id, ws.user_id)] = ws
    for report in reports:
        ws = rows.get((report.repository_id, report.target_user_id))  # type: ignore[assignment]
        report.flags = ws.flags if ws else dict.fromkeys(FLAGS, False)
        report.flag_labels = ws.flag_labels if ws else []
    return reports


def audit_log(
    *, repo: Repository | None = None, repository: str = "", user: str = "", action: str = ""
) -> QuerySet[AuditEntry]:
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
