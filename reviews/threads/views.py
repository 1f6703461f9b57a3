"""The forms of line-comment threads on the proposal page: open a thread, reply, resolve or
unresolve, apply a suggestion. Each is a POST that redirects back to the thread on the page
it came from (the revision named by `back`, else the latest), with the error as a message."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from repos.errors import NotFound, ServiceError
from repos.views import repo_or_404
from repos.visibility import view_for
from reviews import selectors
from reviews.models import Thread
from reviews.threads import services, suggestions


def _proposal_or_404(request, owner: str, name: str, number: int):
    repo = repo_or_404(request, owner, name)
    proposal = selectors.proposal_by_number(repo, number)
    if proposal is None or not selectors.proposal_visible(proposal, view_for(repo, request.user)):
        raise Http404
    return proposal


def _thread_or_404(proposal, thread: int) -> Thread:
    found = Thread.objects.filter(pk=thread, proposal=proposal).select_related("proposal", "revision").first()
    if found is None:
        raise Http404
    return found


def _back(request, proposal, anchor: str = ""):
    args = [proposal.repository.owner.username, proposal.repository.name, proposal.number]
    back = request.POST.get("back", "")
    shown = selectors.revision_by_number(proposal, back) if back.isdigit() else None
    url = (
        reverse("proposal-revision", args=[*args, shown.number]) if shown else reverse("proposal", args=args)
    )
    return redirect(url + (f"#{anchor}" if anchor else ""))


@login_required
@require_POST
def thread_new(request, owner: str, name: str, number: int):
    proposal = _proposal_or_404(request, owner, name, number)
    revision = selectors.revision_by_number(proposal, request.POST.get("revision", ""))
    try:
        if revision is None:
            raise NotFound("That revision is not one of this proposal's.")
        thread = services.thread_create(
            proposal=proposal,
            user=request.user,
            revision=revision,
            path=request.POST.get("path", ""),
            side=request.POST.get("side", ""),
            line_start=request.POST.get("line_start", ""),
            line_end=request.POST.get("line_end", ""),
            body=request.POST.get("body", ""),
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _back(request, proposal, "threads")
    return _back(request, proposal, f"thread-{thread.pk}")


@login_required
@require_POST
def thread_reply(request, owner: str, name: str, number: int, thread: int):
    proposal = _proposal_or_404(request, owner, name, number)
    found = _thread_or_404(proposal, thread)
    try:
        services.thread_reply(thread=found, user=request.user, body=request.POST.get("body", ""))
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(request, proposal, f"thread-{found.pk}")


@login_required
@require_POST
def thread_resolve(request, owner: str, name: str, number: int, thread: int):
    proposal = _proposal_or_404(request, owner, name, number)
    found = _thread_or_404(proposal, thread)
    try:
        services.thread_resolve(thread=found, user=request.user, resolved=request.POST.get("resolved") == "1")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(request, proposal, f"thread-{found.pk}")


@login_required
@require_POST
def suggestion_apply(request, owner: str, name: str, number: int, thread: int, comment: int):
    proposal = _proposal_or_404(request, owner, name, number)
    found = _thread_or_404(proposal, thread)
    target = found.comments.filter(pk=comment).first()
    if target is None:
        raise Http404
    try:
        sha = suggestions.suggestion_apply(
            comment=target,
            user=request.user,
            expected_head=request.POST.get("head") or None,
            host=request.get_host(),
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Suggestion applied as {sha[:12]}: a new revision.")
    return _back(request, proposal, f"thread-{found.pk}")


@login_required
@require_POST
def comment_change(request, owner: str, name: str, number: int, thread: int, comment: int):
    """Its author edits a line comment (`body`), or deletes it (`delete`)."""
    proposal = _proposal_or_404(request, owner, name, number)
    found = _thread_or_404(proposal, thread)
    target = found.comments.filter(pk=comment).select_related("proposal", "thread").first()
    if target is None:
        raise Http404
    try:
        if "delete" in request.POST:
            if services.comment_delete(comment=target, user=request.user):
                return _back(request, proposal, "threads")
        else:
            services.comment_edit(comment=target, user=request.user, body=request.POST.get("body", ""))
    except ServiceError as exc:
        messages.error(request, exc.message)
    return _back(request, proposal, f"thread-{found.pk}")
