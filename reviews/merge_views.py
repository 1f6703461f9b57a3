"""Merging from the proposal page, POST-redirect-GET: the merge box's button leads to a
confirmation (GET) naming the strategy, the target branch and the revision; confirming POSTs,
and every outcome redirects to the proposal page with a message, so reloading never merges
again. Also "merge when ready" (auto-merge) and review requests, which the page's cards post to."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseForbidden
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from repos.errors import ServiceError
from reviews import automerge, merge, review_requests, selectors
from reviews.mergebox import enqueue_check, merge_state
from reviews.models import MergeStrategy
from reviews.views import TAKEN_DOWN, _back, _proposal_or_404


@login_required
@require_http_methods(["GET", "POST"])
def proposal_merge(request, owner: str, name: str, number: int):
    repo, proposal = _proposal_or_404(request, owner, name, number)
    if request.method == "POST":
        return _merge(request, proposal)
    latest = selectors.latest_revision(proposal)
    strategy = request.GET.get("strategy", MergeStrategy.MERGE)
    if not proposal.is_open or latest is None:
        messages.error(request, f"Proposal #{proposal.number} is {proposal.state}: nothing to merge.")
        return _back(proposal)
    if not merge.may_merge(request.user, repo):
        return HttpResponseForbidden(
            "Only the repository's maintainers and admins may merge.",
            content_type="text/plain; charset=utf-8",
        )
    if strategy not in MergeStrategy.values:
        messages.error(request, "Choose a merge strategy: merge, ff, rebase or squash.")
        return _back(proposal)
    return render(
        request,
        "reviews/merge_confirm.html",
        {
            "repo": repo,
            "proposal": proposal,
            "latest": latest,
            "strategy": strategy,
            "strategy_label": MergeStrategy(strategy).label,
            "tab": "proposals",
            **merge_state(proposal, latest),
        },
    )


def _merge(request, proposal):
    try:
        result = merge.proposal_merge(
            proposal=proposal,
            user=request.user,
            strategy=request.POST.get("strategy", ""),
            expected_head=request.POST.get("head") or None,
        )
    except merge.MergeConflict as exc:
        enqueue_check(proposal)  # the merge box then lists the files from the stored check
        messages.error(request, f"Not merged: {exc.message}. Nothing was changed.")
    except ServiceError as exc:
        if exc.code == TAKEN_DOWN:
            # Not back to the page: it no longer shows this work.
            return HttpResponseForbidden(exc.message, content_type="text/plain; charset=utf-8")
        messages.error(request, f"Not merged: {exc.message}")
    else:
        messages.success(
            request, f"Merged into {proposal.target_branch} as {result.sha[:12]} ({result.strategy})."
        )
    return _back(proposal)


@login_required
@require_POST
def proposal_auto_merge(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    try:
        if request.POST.get("action") == "cancel":
            automerge.auto_merge_cancel(proposal=proposal, user=request.user)
            messages.success(request, "Auto-merge cancelled.")
        else:
            proposal = automerge.auto_merge_enable(
                proposal=proposal, user=request.user, strategy=request.POST.get("strategy", "")
            )
            messages.success(
                request,
                f"It will merge ({proposal.get_auto_merge_strategy_display()}) once the rules are met "
                "and it merges cleanly.",
            )
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(proposal)


@login_required
@require_POST
def proposal_review_request(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    username = request.POST.get("username", "")
    try:
        made = review_requests.review_request(proposal=proposal, actor=request.user, username=username)
    except selectors.ProposalMissing:
        raise Http404 from None  # a reviewer who may not see it: what an unknown proposal answers
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _back(proposal)
    username = username.strip().removeprefix("@")
    messages.success(
        request, f"Review requested from {username}." if made else f"{username} was asked already."
    )
    return _back(proposal)
