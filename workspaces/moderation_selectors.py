"""Reads for moderation: the reports queue and the audit log, filtered, and what of each audit
entry a viewer may read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from gitcore.oids import object_format
from repos.models import AuditEntry, Repository, User
from repos.visibility import View, view_for
from workspaces.models import FLAGS, ModerationAction, Report, Workspace
from workspaces.moderation_common import is_staff

# What the moderation actions record of the state they changed, shown to everyone who may read
# the log. Everything else in `before`/`after` (the refs a take-down, lift or purge moved, with
# their ids, and the proposals a take-down closed) names moderated content: staff only.
STATE_KEYS = frozenset({*FLAGS, "banned", "frozen_by_ban", "is_active", "report", "state"})
# Blocked content is named by its ids alone: its rows say only what was done, to others.
CONTENT_ACTIONS = frozenset({ModerationAction.BLOCK_CONTENT, ModerationAction.UNBLOCK_CONTENT})


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


@dataclass(frozen=True)
class AuditRow:
    """One audit entry as one viewer may read it (the page and the API show these)."""

    id: int
    actor: User | None
    action: str
    repository: Repository | None
    target_user: User | None
    reason: str
    before: dict[str, Any]
    after: dict[str, Any]
    detail: dict[str, Any]
    created_at: datetime
    withheld: bool  # something was left out: refs or ids for staff only


def audit_rows(entries, viewer) -> list[AuditRow]:
    """The entries as `viewer` may read them. Staff read everything. Anyone else (a
    repository's admins on its moderation page) reads the action, the flags, the reason and
    the date, never the ref names or object ids of moderated content: a moderation row's
    `before`/`after` keep only STATE_KEYS, and a ref removal's refs only those the viewer's
    View still shows (repos.visibility)."""
    staff = is_staff(viewer)
    views: dict[int, View] = {}
    rows = []
    for e in entries:
        before, after, detail = dict(e.before or {}), dict(e.after or {}), dict(e.detail or {})
        withheld = False
        if not staff:
            shown = [{k: v for k, v in part.items() if k in STATE_KEYS} for part in (before, after)]
            withheld = shown != [before, after]
            before, after = shown
            if e.action in CONTENT_ACTIONS:
                kept = {k: v for k, v in detail.items() if k == "repository"}
                withheld = withheld or kept != detail
                detail = kept
            if "refs" in detail:
                refs = _visible_refs(e.repository, viewer, detail["refs"], views)
                withheld = withheld or refs != detail["refs"]
                detail["refs"] = refs
        rows.append(
            AuditRow(
                id=e.pk,
                actor=e.actor,
                action=e.action,
                repository=e.repository,
                target_user=e.target_user,
                reason=e.reason,
                before=before,
                after=after,
                detail=detail,
                created_at=e.created_at,
                withheld=withheld,
            )
        )
    return rows


def _visible_refs(repo: Repository | None, viewer, refs, views: dict[int, View]) -> dict[str, str]:
    """The (ref, id) pairs of `refs` the viewer's View shows; none without a repository."""
    if repo is None or not isinstance(refs, dict):
        return {}
    if repo.pk not in views:
        views[repo.pk] = view_for(repo, viewer)
    view = views[repo.pk]
    fmt = object_format(repo.disk_path)
    shown = {}
    for ref, oid in refs.items():
        full = fmt.parse(str(oid))
        if full is not None and view.ref_visible(str(ref)) and view.object_visible(full):
            shown[ref] = oid
    return shown
