"""Reports: anyone signed in reports a workspace; staff and the repository's admins close them,
resolved by an action or dismissed (with an audit row)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import Repository
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
        audit(
            acting_user,
            ModerationAction.DISMISS_REPORT,
            repo=report.repository,
            target=report.target_user,
            reason=(reason or "").strip()[:REASON_MAX] or "dismissed",
            before={"report": report.pk, "state": "open"},
            after={"report": report.pk, "state": report.state},
        )
    return report
