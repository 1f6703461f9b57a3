"""Reads for proposals: who may do what, lists, revisions and what each revision holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from repos.models import Repository, Role
from repos.selectors import role_for
from reviews.models import Approval, Proposal, ProposalRevision, ProposalState


def is_maintainer(user, repo: Repository) -> bool:
    role = role_for(user, repo)
    return role is not None and role >= Role.MAINTAINER


def is_admin(user, repo: Repository) -> bool:
    return role_for(user, repo) == Role.ADMIN


def may_edit(user, proposal: Proposal) -> bool:
    """The author and the repository's maintainers may edit, close and reopen."""
    if user is None or not user.is_authenticated:
        return False
    return proposal.author_id == user.pk or is_maintainer(user, proposal.repository)


def may_approve(user, proposal: Proposal) -> bool:
    return (user is not None and user.is_authenticated and proposal.author_id != user.pk
            and is_maintainer(user, proposal.repository))


def proposals_for(repo: Repository, state: str | None = None) -> QuerySet[Proposal]:
    qs = Proposal.objects.filter(repository=repo).select_related("author")
    if state in ProposalState.values:
        qs = qs.filter(state=state)
    return qs.order_by("-number")


def proposal_by_number(repo: Repository, number) -> Proposal | None:
    try:
        number = int(number)
    except (TypeError, ValueError):
        return None
    if not 1 <= number <= 2**31 - 1:
        return None
    return (Proposal.objects.select_related("repository__owner", "author", "merged_by")
            .filter(repository=repo, number=number).first())


def latest_revision(proposal: Proposal) -> ProposalRevision | None:
    return proposal.revisions.order_by("-number").first()


def revision_by_number(proposal: Proposal, number) -> ProposalRevision | None:
    try:
        number = int(number)
    except (TypeError, ValueError):
        return None
    if not 1 <= number <= 2**31 - 1:
        return None
    return proposal.revisions.filter(number=number).first()


@dataclass(frozen=True)
class ApprovalView:
    username: str
    head_sha: str
    revision: int | None
    stale: bool
    when: datetime


def approvals(proposal: Proposal, current: ProposalRevision | None) -> list[ApprovalView]:
    """Every approval; one given to an earlier head is stale (kept, but shown as such)."""
    rows = Approval.objects.filter(proposal=proposal).select_related("user", "revision")
    head = current.head_sha if current else ""
    return [ApprovalView(a.user.username, a.head_sha, a.revision.number if a.revision else None,
                         a.head_sha != head, a.created_at) for a in rows]
