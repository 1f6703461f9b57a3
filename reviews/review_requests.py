"""Asking people to review a proposal: by hand (its author or a maintainer asks anyone who may
see it), or automatically, the code owners of the files each revision changes who may see it.
Asking twice is a no-op; each new request tells the person (reviews.events.review_requested).

A proposal from a hidden or taken-down workspace is seen only by those the access rule lets
see it (reviews.selectors.may_see). Asking anyone else is refused as if the proposal did not
exist: answering otherwise would tell the asker who may see moderated work."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from repos.errors import Forbidden, InvalidInput, NotFound
from repos.selectors import can_read
from reviews import codeowners, events, selectors
from reviews.models import Proposal, ProposalRevision, ReviewRequest


def may_request(user, proposal: Proposal) -> bool:
    return proposal.is_open and selectors.may_edit(user, proposal)


def _record(proposal: Proposal, reviewer, actor, reason: str) -> ReviewRequest | None:
    request, created = ReviewRequest.objects.get_or_create(
        proposal=proposal, user=reviewer, defaults={"requested_by": actor, "reason": reason}
    )
    if not created:
        return None
    transaction.on_commit(lambda: events.review_requested(proposal, user=reviewer, actor=actor))
    return request


@transaction.atomic
def review_request(*, proposal: Proposal, actor, username: str) -> ReviewRequest | None:
    """Ask `username` to review; None when they were asked already."""
    if not may_request(actor, proposal):
        raise Forbidden("Only the proposal's author and the repository's maintainers may request reviews.")
    username = str(username or "").strip().removeprefix("@")[:150]
    reviewer = get_user_model().objects.filter(username__iexact=username, is_active=True).first()
    # Someone who may not read the repository is as unknown as someone who does not exist.
    if reviewer is None or not can_read(reviewer, proposal.repository):
        raise NotFound(f"No user {username!r} can read this repository.", code="no_such_reviewer")
    if not selectors.may_see(reviewer, proposal):
        raise selectors.ProposalMissing()
    if reviewer.pk == proposal.author_id:
        raise InvalidInput("The author cannot review their own proposal.", fields={"username": ["author"]})
    return _record(proposal, reviewer, actor, ReviewRequest.Reason.MANUAL)


@transaction.atomic
def request_code_owners(proposal: Proposal, revision: ProposalRevision) -> list[str]:
    """Ask the owners of the files `revision` changes (CODEOWNERS of the target branch); returns
    the usernames newly asked."""
    path = proposal.repository.disk_path
    owners = codeowners.read(path, f"refs/heads/{proposal.target_branch}")
    if not owners.rules:
        return []
    files = codeowners.changed_files(path, revision.base_sha, revision.head_sha)
    names = sorted({n for who in codeowners.owners_by_file(owners, files).values() for n in who})
    asked = []
    for reviewer in (
        get_user_model().objects.filter(username__in=names, is_active=True).exclude(pk=proposal.author_id)
    ):
        if selectors.may_see(reviewer, proposal) and _record(
            proposal, reviewer, None, ReviewRequest.Reason.CODEOWNERS
        ):
            asked.append(reviewer.username)
    return asked


def review_requests(proposal: Proposal) -> list[ReviewRequest]:
    return list(proposal.review_requests.select_related("user", "requested_by"))
