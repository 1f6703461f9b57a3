"""Finding a ref: the switcher's JSON (`refs.json`), the branches and tags pages (the
switcher's fallback without JavaScript, and the sidebar's "N more"), and the compare picker.

Every view starts with repo_or_404 and lists refs through repos.refnav as the viewer's View
shows them. Inputs are capped; a bad one is a 400 or the page without it, never a 500.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET

from repos import refnav
from repos.views import repo_or_404
from repos.visibility import view_for

JSON_LIMIT = 100  # entries per kind in refs.json: a filter narrows the rest
PER_PAGE = 100
PICKER_OPTIONS = 200  # entries of each kind offered by the compare picker's lists
MAX_QUERY = 200
MAX_REV = 1024
LIST_PAGES = {refnav.BRANCH: "branches", refnav.TAG: "tags"}


def _text_param(request, key: str, limit: int) -> str | None:
    """A query parameter as text, or None when it is missing, repeated oddly or too long."""
    value = request.GET.get(key, "")
    return value if isinstance(value, str) and len(value) <= limit and "\0" not in value else None


def _base(repo) -> str:
    return reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})


def compare_url(repo, base: str, head: str) -> str:
    return f"{_base(repo)}/compare/{quote(base)}...{quote(head)}"


@require_GET
def refs_json(request, owner: str, name: str):
    """`?kind=branch|tag&q=...`: the first refs of that kind whose name holds q, each with its
    name for the page and for URLs, the count that matched, and the page listing them all."""
    repo = repo_or_404(request, owner, name)
    kind = request.GET.get("kind", refnav.BRANCH)
    query = _text_param(request, "q", MAX_QUERY)
    if kind not in refnav.NAMESPACES or query is None:
        return JsonResponse({"error": "kind must be branch or tag; q at most 200 characters"}, status=400)
    refs, total = refnav.matching(
        repo.disk_path, kind, repo.default_branch, view_for(repo, request.user), query, JSON_LIMIT
    )
    more = f"{_base(repo)}/{LIST_PAGES[kind]}"
    response = JsonResponse(
        {
            "kind": kind,
            "refs": [{"name": ref.text, "ref": ref.quoted} for ref in refs],
            "total": total,
            "more_url": more + (f"?{urlencode({'q': query})}" if query else ""),
        }
    )
    response["Cache-Control"] = "private, max-age=0"
    return response


def _ref_list(request, owner: str, name: str, kind: str):
    repo = repo_or_404(request, owner, name)
    query = _text_param(request, "q", MAX_QUERY)
    if query is None:
        return HttpResponseBadRequest("q: at most 200 characters")
    refs, total = refnav.matching(
        repo.disk_path, kind, repo.default_branch, view_for(repo, request.user), query, limit=10**9
    )
    page = Paginator(refs, PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "repos/ref_list.html",
        {
            "repo": repo,
            "tab": "code",
            "kind": kind,
            "title": "Branches" if kind == refnav.BRANCH else "Tags",
            "query": query,
            "total": total,
            "page_obj": page,
            "tree_base": f"{_base(repo)}/tree/",
            "default_branch": repo.default_branch if kind == refnav.BRANCH else None,
        },
    )


@require_GET
def branches(request, owner: str, name: str):
    return _ref_list(request, owner, name, refnav.BRANCH)


@require_GET
def tags(request, owner: str, name: str):
    return _ref_list(request, owner, name, refnav.TAG)


def picker_context(repo, base: str, head: str) -> dict:
    """The compare picker's fields and suggestions (datalists of branches and tags)."""
    path = repo.disk_path
    return {
        "picker": {
            "base": base,
            "head": head,
            "action": f"{_base(repo)}/compare",
            "swap_url": compare_url(repo, head, base) if base and head else "",
            "branches": [r.text for r in refnav.branches(path, repo.default_branch)[:PICKER_OPTIONS]],
            "tags": [r.text for r in refnav.tags(path)[:PICKER_OPTIONS]],
        }
    }


def compare_picker_page(request, repo, base: str, head: str, *, status: int = 200):
    return render(
        request,
        "repos/compare_pick.html",
        {"repo": repo, "tab": "commits", **picker_context(repo, base, head)},
        status=status,
    )


@require_GET
def compare_picker(request, owner: str, name: str):
    """`/compare`: a form for base and head; `?base=..&head=..` goes to `/compare/base...head`.
    Without them, the default branch against the branch with the newest commit."""
    repo = repo_or_404(request, owner, name)
    base = _text_param(request, "base", MAX_REV)
    head = _text_param(request, "head", MAX_REV)
    if base is None or head is None:
        return compare_picker_page(request, repo, "", "", status=400)
    base, head = base.strip(), head.strip()
    if base and head:
        return redirect(compare_url(repo, base, head))
    if not base and not head:
        others = [
            r for r in refnav.branches(repo.disk_path, repo.default_branch) if r.name != repo.default_branch
        ]
        base, head = repo.default_branch, others[0].text if others else ""
    return compare_picker_page(request, repo, base, head)


urlpatterns: list = [
    path("<str:owner>/<str:name>/refs.json", refs_json, name="repo-refs-json"),
    path("<str:owner>/<str:name>/branches", branches, name="repo-branches"),
    path("<str:owner>/<str:name>/tags", tags, name="repo-tags"),
    path("<str:owner>/<str:name>/compare", compare_picker, name="repo-compare-pick"),
]
