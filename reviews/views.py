"""Proposal pages: the list, one proposal (or one of its revisions) with commits, diff,
comments, approvals and the merge box, and the forms they post to. The "new proposal" form
is reviews.new_proposal.

A proposal of taken-down or hidden work answers 404, as a missing one does, to those who may
not see that work (reviews.selectors.hidden_proposal_ids), and lists leave it out."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from repos.compare import compare_ids
from repos.errors import ServiceError
from repos.views import repo_or_404
from repos.views.diffs import diff_context
from repos.visibility import view_for
from reviews import selectors, services
from reviews.markdown import proposal_markdown
from reviews.mergebox import merge_box_context
from reviews.models import TITLE_MAX, ProposalState
from reviews.threads.page import threads_context
from workspaces.webedit.places import proposal_edit_links

PER_PAGE = 30
TAKEN_DOWN = "content_taken_down"  # repos.visibility.refuse_republishing's code


def _proposal_or_404(request, owner: str, name: str, number: int):
    repo = repo_or_404(request, owner, name)
    proposal = selectors.proposal_by_number(repo, number)
    if proposal is None or not selectors.proposal_visible(proposal, view_for(repo, request.user)):
        raise Http404
    return repo, proposal


def _back(proposal):
    return redirect(
        "proposal",
        owner=proposal.repository.owner.username,
        name=proposal.repository.name,
        number=proposal.number,
    )


def proposal_list(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    state = request.GET.get("state", ProposalState.OPEN)
    if state not in (*ProposalState.values, "all"):
        state = ProposalState.OPEN
    view = view_for(repo, request.user)
    page = Paginator(
        selectors.proposals_for(repo, None if state == "all" else state, view), PER_PAGE
    ).get_page(request.GET.get("page"))
    counts = {s: selectors.proposals_for(repo, s, view).count() for s in ProposalState.values}
    return render(
        request,
        "reviews/list.html",
        {
            "repo": repo,
            "page": page,
            "state": state,
            "counts": counts,
            "tab": "proposals",
        },
    )


def proposal_detail(
    request,
    owner: str,
    name: str,
    number: int,
    revision: int | None = None,
):
    repo, proposal = _proposal_or_404(request, owner, name, number)
    latest = selectors.latest_revision(proposal)
    shown = selectors.revision_by_number(proposal, revision) if revision is not None else latest
    # A revision left without a ref (its branch deleted) can still reach work taken down
    # since: its diff would show that work.
    if shown is None or view_for(repo, request.user).reaches_hidden([shown.head_sha]):
        raise Http404
    user = request.user
    comments = list(proposal.comments.filter(thread=None).select_related("revision"))
    for comment in comments:
        comment.html = proposal_markdown(repo, proposal, comment.body)
    approvals = selectors.approvals(proposal, latest)
    context = {
        "repo": repo,
        "proposal": proposal,
        "revision": shown,
        "latest": latest,
        "tab": "proposals",
        "revisions": list(proposal.revisions.select_related("push")),
        "comparison": compare_ids(repo, shown.base_sha, shown.head_sha),
        "comments": comments,
        # Newlines are line breaks, as GitHub shows descriptions (and `-o description=` means them).
        "description_html": proposal_markdown(repo, proposal, proposal.description, breaks=True),
        "approvals": approvals,
        "may_edit": selectors.may_edit(user, proposal),
        # Not again for a head this user already approved (a new revision brings the button back).
        "may_approve": proposal.is_open
        and selectors.may_approve(user, proposal)
        and not any(a.username == user.username and not a.stale for a in approvals),
        "title_max": TITLE_MAX,
        **diff_context(request, repo.disk_path, shown.base_sha, shown.head_sha),
    }
    # Its files, to edit in place on its ref (on the latest revision of an open proposal).
    context["edit_links"] = (
        proposal_edit_links(repo, user, proposal.number, proposal.source_ref, context["diff"].files)
        if proposal.is_open and latest is not None and shown.pk == latest.pk
        else []
    )
    context.update(threads_context(request, repo, proposal, shown, latest, context["diff"]))
    context.update(merge_box_context(request, repo, proposal, latest))
    # "Show the rest" links lead back to this page.
    args = [repo.owner.username, repo.name, proposal.number]
    context["diff_url"] = (
        reverse("proposal-revision", args=[*args, shown.number])
        if revision is not None
        else reverse("proposal", args=args)
    )
    return render(request, "reviews/proposal.html", context)


@login_required
@require_POST
def proposal_edit(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    try:
        services.proposal_edit(
            proposal=proposal,
            user=request.user,
            title=request.POST.get("title", ""),
            description=request.POST.get("description", ""),
        )
        messages.success(request, "Proposal updated.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(proposal)


@login_required
@require_POST
def proposal_comment(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    try:
        services.comment_add(proposal=proposal, user=request.user, body=request.POST.get("body", ""))
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(proposal)


@login_required
@require_POST
def proposal_approve(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    try:
        approval = services.proposal_approve(proposal=proposal, user=request.user)
        messages.success(request, f"Approved revision {approval.revision.number}.")  # type: ignore[union-attr]  # a new approval has its revision
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(proposal)


@login_required
@require_POST
def proposal_state(request, owner: str, name: str, number: int):
    _repo, proposal = _proposal_or_404(request, owner, name, number)
    try:
        if request.POST.get("action") == "reopen":
            services.proposal_reopen(proposal=proposal, user=request.user)
            messages.success(request, "Proposal reopened.")
        else:
            services.proposal_close(proposal=proposal, user=request.user)
            messages.success(request, "Proposal closed.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(proposal)
