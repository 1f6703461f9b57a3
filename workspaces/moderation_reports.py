"""Reports: anyone signed in reports a workspace; staff and the repository's admins close them,
resolved by an action or dismissed (with an audit row). The repository's admins are told of a
new report (staff work the site-wide queue at /moderation), and the reporter of its outcome."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from notifications.services import notify
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import Repository, Role
from repos.selectors import members
from workspaces.models import ModerationAction, Report
from workspaces.moderation_common import REASON_MAX, audit, may_moderate


def report_create(*, repo: Repository, target_user, reporter, reason: str) -> Report:
    if reporter is None or not reporter.is_authenticated:
        raise Forbidden("Sign in to report a workspace.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(
            "Say what is wrong: a reason is required.", fields={"reason": ["This field is required."]}
        )
    if len(reason) > REASON_MAX:
        raise InvalidInput(
            f"The reason is longer than {REASON_MAX} characters.", fields={"reason": ["Too long."]}
        )
    report = Report.objects.create(repository=repo, target_user=target_user, reporter=reporter, reason=reason)
    transaction.on_commit(lambda: _tell_admins(report))
    return report


def _tell_admins(report: Report) -> None:
    """Neither the reporter nor the reported admin (who would learn who reported them) is told."""
    repo = report.repository
    url = reverse("repository-moderation", args=[repo.owner.username, repo.name])
    text = f"{report.reporter}'s report on {report.target_user}'s workspace in {repo.full_name}"
    for user, role in members(repo):
        if (
            role == Role.ADMIN
            and user.is_active
            and user.pk not in (report.reporter_id, report.target_user_id)
        ):
            notify(
                user,
                kind="report",
                text=text,
                url=url,
                repository=repo,
                actor=report.reporter,
                body=report.reason,
            )


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
        audit(
            acting_user,
            ModerationAction.DISMISS_REPORT,
            repo=report.repository,
            target=report.target_user,
            reason=(reason or "").strip()[:REASON_MAX] or "dismissed",
            before={"report": report.pk, "state": "open"},
            after={"report": report.pk, "state": report.state},
        )
    reporter = report.reporter
    if reporter is not None and reporter.is_active and reporter.pk != getattr(acting_user, "pk", None):
        repo, target, state = report.repository, report.target_user, report.state
        transaction.on_commit(
            lambda: notify(
                reporter,
                kind="report_outcome",
                text=f"Your report on {target}'s workspace in {repo.full_name} was {state}.",
                url=reverse("repository", args=[repo.owner.username, repo.name]),
                repository=repo,
            )
        )
    return report
