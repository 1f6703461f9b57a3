"""Thin Celery tasks for reviews: proposals follow pushes and archived refs (reviews.following);
merge checks, code owners' review requests and auto-merge follow new revisions, target moves,
approvals and commit statuses (reviews.mergecheck, reviews.review_requests, reviews.automerge).
All take ids, return quietly when the row is gone, and are safe to run twice."""

from __future__ import annotations

from celery import shared_task

from gitcore.git import GitTimeout
from repos import enqueue
from repos.models import Push
from repos.models.statuses import StatusState
from reviews import automerge, events, following, mergecheck, review_requests
from reviews.models import Proposal, ProposalRevision, ProposalState
from reviews.selectors import latest_revision


def _push(push_id: int | None) -> Push | None:
    if push_id is None:
        return None
    return (
        Push.objects.filter(pk=push_id)
        .select_related("repository__owner", "pusher")
        .prefetch_related("ref_updates")
        .first()
    )


@shared_task(autoretry_for=(GitTimeout,), retry_backoff=30, max_retries=3, acks_late=True, ignore_result=True)
def follow_push(push_id: int) -> str:
    push = _push(push_id)
    if push is None:
        return "gone"
    following.proposals_follow_push(push=push)
    # The target branches it moved (a merge is a push too): their proposals' checks are stale.
    for branch in sorted(
        {u.ref[len("refs/heads/") :] for u in push.ref_updates.all() if u.ref.startswith("refs/heads/")}
    ):
        _enqueue_check(push.repository_id, branch)
    return "done"


def _enqueue_check(repository_id: int, branch: str) -> None:
    enqueue.after_commit("reviews.tasks.check_merges", repository_id, branch)


@shared_task(acks_late=True, ignore_result=True)
def follow_archive(repository_id: int, ref: str, sha: str, push_id: int | None = None) -> str:
    following.proposals_follow_archive(repository_id=repository_id, ref=ref, sha=sha, push=_push(push_id))
    return "done"


_RETRY = {"autoretry_for": (GitTimeout,), "retry_backoff": 10, "max_retries": 3}


@shared_task(acks_late=True, ignore_result=True, **_RETRY)
def proposal_revised(revision_id: int) -> str:
    """A new revision: ask its code owners, check whether it merges, auto-merge if ready."""
    revision = ProposalRevision.objects.select_related("proposal__repository").filter(pk=revision_id).first()
    if revision is None or revision.proposal.state != ProposalState.OPEN:
        return "gone"
    proposal = revision.proposal
    review_requests.request_code_owners(proposal, revision)
    mergecheck.check_proposal(proposal)
    return automerge.try_auto_merge(proposal)


@shared_task(acks_late=True, ignore_result=True, **_RETRY)
def check_merges(repository_id: int, branch: str) -> str:
    """The target branch moved: check every open proposal into it, then try the auto-merges."""
    count = mergecheck.check_target(repository_id, branch)
    for proposal in Proposal.objects.filter(
        repository_id=repository_id, target_branch=branch, state=ProposalState.OPEN
    ).exclude(auto_merge_strategy=""):
        automerge.try_auto_merge(proposal)
    return f"{count} checked"


@shared_task(acks_late=True, ignore_result=True, **_RETRY)
def check_merge(proposal_id: int) -> str:
    """One proposal's check, for a page that found none for the current pair."""
    proposal = Proposal.objects.select_related("repository").filter(pk=proposal_id).first()
    if proposal is None:
        return "gone"
    check = mergecheck.check_proposal(proposal)
    return check.state if check else "nothing to check"


@shared_task(acks_late=True, ignore_result=True, **_RETRY)
def auto_merge(proposal_id: int) -> str:
    proposal = Proposal.objects.select_related("repository", "auto_merge_by").filter(pk=proposal_id).first()
    if proposal is None:
        return "gone"
    return automerge.try_auto_merge(proposal)


@shared_task(acks_late=True, ignore_result=True, **_RETRY)
def follow_status(repository_id: int, sha: str, context: str, state: str) -> str:
    """A status on a commit: the open proposals whose latest head it is hear of a failure and
    may now auto-merge."""
    candidates = Proposal.objects.filter(
        repository_id=repository_id, state=ProposalState.OPEN, revisions__head_sha=sha
    ).distinct()
    done = 0
    for proposal in candidates.select_related("repository", "auto_merge_by"):
        latest = latest_revision(proposal)
        if latest is None or latest.head_sha != sha:
            continue
        done += 1
        if state in (StatusState.FAILURE, StatusState.ERROR):
            events.check_failed(proposal, context=context, state=state)
        elif proposal.auto_merge_strategy:
            automerge.try_auto_merge(proposal)
    return f"{done} proposals"
