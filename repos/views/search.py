"""In-repository search: `git grep` on one revision the viewer may see (repos/grep.py).

`?q=` the search (literal unless `regex=1`, case-insensitive unless `case=1`), `ref=` a branch,
tag or commit id (the default branch when absent), `path=` a glob, `page=` the page. Refs
and ids resolve through the viewer's View, so a hidden ref or commit answers like a
missing one. Bad input answers 400 or 404 with a message; a search that runs out of time
shows what it found and says so.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.http import Http404
from django.shortcuts import render

from repos import browse, grep, ratelimits
from repos.views import repo_or_404
from repos.views.browse import NOT_FOUND, display, url_for, url_rev
from repos.visibility import view_for


def _page_number(request) -> int:
    raw = request.GET.get("page", "1")
    if not raw.isdigit() or not 1 <= int(raw) <= grep.MAX_PAGE:
        raise Http404("no such page")
    return int(raw)


@ratelimits.limit("search")
def search(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    page = _page_number(request)
    asked_ref = request.GET.get("ref", "")
    ref = asked_ref or repo.default_branch
    sha = browse.resolve_commit(repo.disk_path, url_rev(ref), view_for(repo, request.user))
    if sha is None and asked_ref:
        raise Http404(NOT_FOUND)
    params = {
        "q": request.GET.get("q", ""),
        "ref": asked_ref,
        "path": request.GET.get("path", ""),
        "regex": request.GET.get("regex") == "1",
        "case": request.GET.get("case") == "1",
    }
    context = {"repo": repo, "tab": "code", "form": params, "ref": ref, "empty_repo": sha is None}
    if not params["q"] or sha is None:
        return render(request, "repos/search.html", context)
    try:
        query = grep.parse_query(params["q"], regex=params["regex"], case=params["case"], path=params["path"])
    except grep.BadQuery as exc:
        return render(request, "repos/search.html", {**context, "error": str(exc)}, status=400)
    found = grep.search(repo.disk_path, sha, query, page=page, timeout=settings.SEARCH_TIMEOUT)
    if found.error:
        error = f"git could not use this search: {found.error}"
        return render(request, "repos/search.html", {**context, "error": error}, status=400)
    if page > 1 and not found.matches and not found.timed_out:
        raise Http404("past the last page")
    return render(
        request,
        "repos/search.html",
        {
            **context,
            "searched": True,
            "files": _by_file(repo, sha, found.matches),
            "count": len(found.matches),
            "timed_out": found.timed_out,
            "timeout": settings.SEARCH_TIMEOUT,
            "page": page,
            "first": (page - 1) * grep.PER_PAGE + 1,
            "newer_url": _page_url(request, page - 1) if page > 1 else None,
            "older_url": _page_url(request, page + 1) if found.more else None,
            "per_file": grep.MAX_PER_FILE,
            "commit": sha,
        },
    )


def _by_file(repo, sha: str, matches: list[grep.Match]) -> list[dict]:
    files: list[dict] = []
    for match in matches:
        if not files or files[-1]["raw_path"] != match.path:
            files.append(
                {
                    "raw_path": match.path,
                    "path": display(match.path),
                    "url": url_for(repo, "blob", sha, match.path),
                    "lines": [],
                }
            )
        files[-1]["lines"].append({"number": match.line, "parts": match.parts, "cut": match.cut})
    return files


def _page_url(request, page: int) -> str:
    params = {key: request.GET[key] for key in ("q", "ref", "path", "regex", "case") if request.GET.get(key)}
    return "?" + urlencode({**params, "page": page})
