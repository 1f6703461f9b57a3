"""The proposal page's merge box: what git says (MergeCheck), what the branch's rules still
ask for, and the strategies on offer; and the approvals card's review requests.

Nothing here merges: a check for another (target, head) pair than the current one shows as
"checking" and enqueues reviews.tasks.check_merge, which computes it in a worker."""

from __future__ import annotations

from repos import enqueue
from reviews import merge, mergecheck, review_requests, rules
from reviews.models import MergeCheck, MergeStrategy


def enqueue_check(proposal) -> None:
    proposal_id = proposal.pk
    enqueue.after_commit("reviews.tasks.check_merge", proposal_id)


def merge_state(proposal, latest) -> dict:
    """{"check": MergeCheck | None, "checking": bool, "verdict": rules.Verdict}, for the page
    and the confirmation alike."""
    pair = mergecheck.current_pair(proposal, latest.head_sha if latest else None)
    check = mergecheck.cached(proposal, pair)
    checking = pair is not None and check is None
    if checking:
        enqueue_check(proposal)
    return {
        "check": check,
        "checking": checking,
        "verdict": rules.evaluate(proposal, latest),
        "CLEAN": MergeCheck.State.CLEAN,
        "CONFLICTS": MergeCheck.State.CONFLICTS,
    }


def merge_box_context(request, repo, proposal, latest) -> dict:
    """Context for reviews/_merge_box.html and reviews/_approvals.html."""
    user = request.user
    may_merge = proposal.is_open and latest is not None and merge.may_merge(user, repo)
    context: dict = {
        "may_merge": may_merge,
        "strategies": MergeStrategy.choices,
        "review_requests": review_requests.review_requests(proposal),
        "may_request_review": review_requests.may_request(user, proposal),
        "auto_merge_label": MergeStrategy(proposal.auto_merge_strategy).label
        if proposal.auto_merge_strategy
        else "",
        "may_cancel_auto_merge": bool(proposal.auto_merge_strategy)
        and (may_merge or review_requests.may_request(user, proposal)),
    }
    if proposal.is_open and latest is not None:
        context.update(merge_state(proposal, latest))
    return context
