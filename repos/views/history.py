"""History pages: a ref's (or a path's) commits, one commit, and the comparison of two refs.

As on the other browsing pages (repos.views.browse), refs and ids are resolved through the
viewer's View, and every bad input is a 404, never a 500.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import redirect, render

from gitcore.gittools import rev_parse
from repos import browse, compare, history, ratelimits
from repos.views import navigation, repo_or_404
from repos.views.browse import NOT_FOUND, locate, page_context, repo_base, url_for, url_rev
from repos.views.diffs import rendered_diff_context
from repos.visibility import view_for

COMMITS_PER_PAGE = 50
MAX_PAGE = 10_000
LONG_COMPARE_DIFF_CAPS = {"max_bytes": 256 * 1024, "max_files": 50, "max_file_lines": 1000}


def _page_number(request) -> int:
    raw_page = request.GET.get("page", "1")
    if not raw_page.isdigit() or not 1 <= int(raw_page) <= MAX_PAGE:
        raise Http404("no such page")
    return int(raw_page)


def commits(request, owner: str, name: str, spec: str = ""):
    if not spec:
        repo = repo_or_404(request, owner, name)
        if rev_parse(repo.disk_path, f"refs/heads/{repo.default_branch}") is None:
            return redirect(repo_base(repo))  # an empty repository: nothing to list yet
        spec = repo.default_branch
    repo, revision, entry = locate(request, owner, name, spec)
    page = _page_number(request)
    found = history.log(
        repo.disk_path,
        revision.sha,
        item=entry.path,
        skip=(page - 1) * COMMITS_PER_PAGE,
        limit=COMMITS_PER_PAGE + 1,
    )
    if not found and page > 1:
        raise Http404("past the last page")
    return render(
        request,
        "repos/commits.html",
        {
            **page_context(repo, revision, entry, tab="commits"),
            "commits": found[:COMMITS_PER_PAGE],
            "page": page,
            "older": len(found) > COMMITS_PER_PAGE,
            "newer": page > 1,
        },
    )


def commit(request, owner: str, name: str, sha: str):
    """One commit and its diff against its first parent (a root commit: against the empty
    tree). An abbreviated id that is ambiguous answers 404, like one that is missing."""
    repo = repo_or_404(request, owner, name)
    full = browse.visible_commit(repo.disk_path, sha, view_for(repo, request.user))
    if full is None:
        raise Http404(NOT_FOUND)
    detail = history.commit_detail(repo.disk_path, full)
    base = detail.parents[0] if detail.parents else None
    return render(
        request,
        "repos/commit.html",
        {
            "repo": repo,
            "commit": detail,
            "tab": "commits",
            "tree_url": url_for(repo, "tree", full),
            **rendered_diff_context(request, repo.disk_path, base, full),
        },
    )


@ratelimits.limit("compare")
def compare_view(request, owner: str, name: str, spec: str):
    """`base...head`, or just `head` (against the default branch). Both sides are resolved as
    the viewer may see them: a hidden base would still show as the bound of a comparison."""
    repo = repo_or_404(request, owner, name)
    base, sep, head = spec.partition("...")
    if not sep:
        base, head = repo.default_branch, spec
    result = compare.compare(
        repo, url_rev(base), url_rev(head), with_diff=False, view=view_for(repo, request.user)
    )
    if result is None:
        raise Http404(NOT_FOUND)
    return render(
        request,
        "repos/compare.html",
        {
            "repo": repo,
            "base_name": base,
            "head_name": head,
            "comparison": result,
            "tab": "commits",
            **navigation.picker_context(repo, base, head),
            # A long range: the total counted under a time limit, and less of the diff at first.
            "total_commits": compare.count_commits(repo.disk_path, result.base, result.head)
            if result.commits_truncated
            else None,
            **rendered_diff_context(
                request,
                repo.disk_path,
                result.merge_base,
                result.head,
                caps=LONG_COMPARE_DIFF_CAPS if result.commits_truncated else None,
            ),
        },
    )
