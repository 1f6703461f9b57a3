"""Interdiff pages: two revisions of a proposal compared (reviews.interdiff), as a diff page and
as `git range-diff` text, and the picker's form target that leads to them.

Who may see the proposal decides, as on the proposal page: a hidden or private proposal, an
unknown revision, or revisions that reach taken-down work answer 404."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from gitcore.git import GitError, GitTimeout
from repos.views import repo_or_404
from repos.views.diffs import diff_context
from repos.visibility import view_for
from reviews import interdiff, selectors


def _revisions_or_404(request, owner: str, name: str, number: int, old: int, new: int):
    repo = repo_or_404(request, owner, name)
    proposal = selectors.proposal_by_number(repo, number)
    view = view_for(repo, request.user)
    if proposal is None or not selectors.proposal_visible(proposal, view):
        raise Http404
    if not old < new:
        raise Http404
    a = selectors.revision_by_number(proposal, old)
    b = selectors.revision_by_number(proposal, new)
    # A revision left without a ref can still reach work taken down since (as on its own page).
    if a is None or b is None or view.reaches_hidden([a.head_sha, b.head_sha]):
        raise Http404
    return repo, proposal, a, b


def interdiff_page(request, owner: str, name: str, number: int, old: int, new: int):
    repo, proposal, a, b = _revisions_or_404(request, owner, name, number, old, new)
    try:
        sides = interdiff.sides(repo.disk_path, a, b)
        diff = diff_context(request, repo.disk_path, sides.left, sides.right)
    except GitError:
        raise Http404 from None  # a revision's objects are gone (pruned): nothing to compare
    context = {
        "repo": repo,
        "proposal": proposal,
        "old": a,
        "new": b,
        "sides": sides,
        "tab": "proposals",
        "revisions": list(proposal.revisions.all()),
        "latest": selectors.latest_revision(proposal),
        "revision": b,
        **diff,
    }
    return render(request, "reviews/interdiff.html", context)


def range_diff_text(request, owner: str, name: str, number: int, old: int, new: int):
    repo, _proposal, a, b = _revisions_or_404(request, owner, name, number, old, new)
    if a.base_sha == a.head_sha or b.base_sha == b.head_sha:
        # git range-diff refuses an empty range; say what there is instead.
        return _text(f"Revision {a.number if a.base_sha == a.head_sha else b.number} has no commits.\n")
    try:
        result = interdiff.range_diff(repo.disk_path, a, b)
    except GitTimeout:
        return _text("git range-diff took too long; compare the revisions locally.\n", status=503)
    except GitError:
        raise Http404 from None  # a revision's objects are gone (pruned)
    text = result.text
    if result.truncated:
        text += f"\n[cut: the output is larger than {interdiff.RANGE_DIFF_MAX_BYTES // 1024} KiB]\n"
    return _text(text)


def _text(body: str, status: int = 200) -> HttpResponse:
    response = HttpResponse(body, content_type="text/plain; charset=utf-8", status=status)
    response["X-Content-Type-Options"] = "nosniff"
    return response


def interdiff_pick(request, owner: str, name: str, number: int):
    """The picker's GET form (`?from=A&to=B`): to the interdiff of the older and the newer of
    the two, or to the revision's own page when both are the same."""
    repo = repo_or_404(request, owner, name)
    proposal = selectors.proposal_by_number(repo, number)
    if proposal is None or not selectors.proposal_visible(proposal, view_for(repo, request.user)):
        raise Http404
    try:
        a, b = sorted((int(request.GET.get("from", "")), int(request.GET.get("to", ""))))
    except ValueError:
        raise Http404 from None
    if a < 1:
        raise Http404
    args = [repo.owner.username, repo.name, proposal.number]
    if a == b:
        return redirect(reverse("proposal-revision", args=[*args, a]))
    return redirect(reverse("proposal-interdiff", args=[*args, a, b]))
