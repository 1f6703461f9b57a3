"""The search page: /search?q=&type=code|repositories|commits|proposals|users&page=N, with the
count of each type. Only what the viewer may read is found (search.backend)."""

from __future__ import annotations

from django.core.paginator import EmptyPage, Paginator
from django.shortcuts import render
from django.views.decorators.http import require_GET

from repos import ratelimits
from search import backend
from search.paging import Results
from search.query import KINDS, QueryError, parse

PER_PAGE = 20
LABELS = {
    "code": "Code",
    "repositories": "Repositories",
    "commits": "Commits",
    "proposals": "Proposals",
    "users": "Users",
}


@require_GET
@ratelimits.limit("search")
def search_page(request):
    kind = request.GET.get("type") or "code"
    regex = request.GET.get("regex") == "1"
    context: dict = {
        "q": request.GET.get("q", ""),
        "kind": kind,
        "regex": regex,
        "labels": LABELS,
        "count_cap": backend.COUNT_CAP,
    }
    try:
        if kind not in KINDS:
            raise QueryError(f"Search one of: {', '.join(KINDS)}.")
        number = _page_number(request.GET.get("page"))
        query = parse(request.GET.get("q"), regex=regex)
    except QueryError as exc:
        return render(request, "search/search.html", {**context, "error": str(exc)}, status=400)
    if query is None:
        return render(request, "search/search.html", context)
    counts: dict[str, int | None] = {}
    for other in KINDS:
        try:
            counts[other] = Results(other, query, request.user).count()
        except QueryError:
            counts[other] = None
    context["counts"] = counts
    context["tabs"] = [(other, LABELS[other], counts[other]) for other in KINDS]
    try:
        paginator = Paginator(Results(kind, query, request.user), PER_PAGE)
        page = paginator.page(number)
    except EmptyPage:
        page = None
    except QueryError as exc:
        return render(request, "search/search.html", {**context, "error": str(exc)}, status=400)
    context["page"] = page
    return render(request, "search/search.html", context)


def _page_number(raw: str | None) -> int:
    if raw is None or raw == "":
        return 1
    if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
        raise QueryError("The page is a number from 1.")
    return int(raw)
