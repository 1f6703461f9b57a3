"""Reads for proposals: who may do what, lists, revisions and what each revision holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from repos.errors import NotFound
from repos.hooks import refspace
from repos.models import Repository, Role
from repos.selectors import can_read, role_for
from repos.visibility import EVERYTHING, View, view_for
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
    return (
        user is not None
        and user.is_authenticated
        and proposal.author_id != user.pk
        and is_maintainer(user, proposal.repository)
    )


def proposals_for(repo: Repository, state: str | None = None, view: View = EVERYTHING) -> QuerySet[Proposal]:
    """The repository's proposals the viewer may see (hidden_proposal_ids), newest first."""
    qs = Proposal.objects.filter(repository=repo).select_related("author")
    if state in ProposalState.values:
        qs = qs.filter(state=state)
    hidden = hidden_proposal_ids(repo, view)
    if hidden:
        qs = qs.exclude(pk__in=hidden)
    return qs.order_by("-number")


def _source_owner(ref: str) -> str:
    return ref.split("/", 3)[2] if ref.startswith(refspace.WORKSPACES) and ref.count("/") >= 3 else ""


def hidden_proposal_ids(repo: Repository, view: View, only: Proposal | None = None) -> set[int]:
    """Proposals the viewer may not see: their author's workspace, or the workspace they
    propose from, is hidden from the viewer, or one of their revisions is a hidden object
    (it was taken down, or lives in a hidden workspace only). Their pages answer as missing
    ones, and lists leave them out."""
    if not view.restricts:
        return set()
    rows = Proposal.objects.filter(repository=repo)
    if only is not None:
        rows = rows.filter(pk=only.pk)
    hidden = set()
    for pk, author, ref in rows.values_list("pk", "author__username", "source_ref"):
        owner = _source_owner(ref)
        if (
            not view.username_visible(author)
            or not view.ref_visible(ref)
            or (owner and not view.username_visible(owner))
        ):
            hidden.add(pk)
    revisions = list(
        ProposalRevision.objects.filter(proposal__in=rows)
        .exclude(proposal_id__in=hidden)
        .values_list("proposal_id", "head_sha")
    )
    bad = view.hidden_objects({head.lower() for _pk, head in revisions})
    return hidden | {pk for pk, head in revisions if head.lower() in bad}


def proposal_visible(proposal: Proposal, view: View) -> bool:
    return not hidden_proposal_ids(proposal.repository, view, only=proposal)


def may_see(user, proposal: Proposal) -> bool:
    """Whether `user` may read the proposal's repository and see the proposal itself: who may
    be told of it, asked to review it, or shown its title in an old notification."""
    repo = proposal.repository
    return can_read(user, repo) and proposal_visible(proposal, view_for(repo, user))


class ProposalMissing(NotFound):
    """The one answer for a proposal that does not exist or that the person it concerns may not
    see (the API renders it as it renders any missing proposal; the pages answer 404)."""

    def __init__(self) -> None:
        super().__init__("Proposal not found.")


def proposal_by_number(repo: Repository, number) -> Proposal | None:
    try:
        number = int(number)
    except (TypeError, ValueError):
        return None
    if not 1 <= number <= 2**31 - 1:
        return None
    return (
        Proposal.objects.select_related("repository__owner", "author", "merged_by")
        .filter(repository=repo, number=number)
        .first()
    )


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
    return [
        ApprovalView(
            a.user.username,
            a.head_sha,
            a.revision.number if a.revision else None,
            a.head_sha != head,
            a.created_at,
        )
        for a in rows
    ]
