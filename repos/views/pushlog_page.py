"""The Pushlog tab: the pushlog as an HTML page, newest first, filtered by user, ref, dates and
workspaces. It uses json-pushes' query parser and its PushFilter, so it shows exactly what
json-pushes and the Atom feed show this viewer (taken-down and hidden work is left out)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from urllib.parse import urlencode

from django.shortcuts import render
from django.urls import reverse

from gitcore.gittools import is_zero
from gitcore.oids import object_format
from repos import history, pushlog, pushlog_query
from repos.models import Push
from repos.views import repo_or_404
from repos.visibility import view_for

PER_PAGE = 25
COMMITS_SHOWN = 10  # per push, newest first; the rest are a link away
FILTERS = ("user", "ref", "startdate", "enddate")


@dataclass(frozen=True)
class RefMove:
    ref: str
    old: str
    new: str
    forced: bool
    compare_url: str | None  # old...new, when the ref existed before and after

    @property
    def created(self) -> bool:
        return is_zero(self.old)

    @property
    def deleted(self) -> bool:
        return is_zero(self.new)


@dataclass(frozen=True)
class PushRow:
    push: Push
    refs: list[RefMove]
    commits: list[history.CommitDetail]
    commit_count: int
    json_url: str


def _params(request) -> dict[str, str]:
    """The filters as json-pushes reads them. Workspaces are off unless asked for: the page is
    the project's history first."""
    params = {key: request.GET.get(key, "").strip() for key in (*FILTERS, "startID", "endID")}
    params["workspaces"] = "1" if request.GET.get("workspaces") == "1" else "0"
    return params


def _page(qs, query: pushlog_query.Query) -> tuple[list[Push], int | None, int | None]:
    """One page of pushes, newest first, and the startID / endID of the pages beside it."""
    if query.start_id is not None:  # the newer page: the oldest PER_PAGE above start_id
        rows = list(qs.filter(pk__gt=query.start_id).order_by("pk")[: PER_PAGE + 1])
        newer = rows[PER_PAGE - 1].pk if len(rows) > PER_PAGE else None
        rows = rows[:PER_PAGE][::-1]
        older = qs.filter(pk__lte=query.start_id).exists()
    else:
        upto = qs if query.end_id is None else qs.filter(pk__lte=query.end_id)
        rows = list(upto.order_by("-pk")[: PER_PAGE + 1])
        older = len(rows) > PER_PAGE
        rows = rows[:PER_PAGE]
        newer = (
            rows[0].pk
            if rows and query.end_id is not None and qs.filter(pk__gt=rows[0].pk).exists()
            else None
        )
    older_end = rows[-1].pk - 1 if rows and older else None
    return rows, newer, older_end


def _link(base: str, filters: dict[str, str], **extra) -> str:
    params = {k: v for k, v in filters.items() if v and k not in ("startID", "endID")}
    params.update({k: str(v) for k, v in extra.items()})
    return f"{base}?{urlencode(params)}"


def pushlog_page(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    filters = _params(request)
    here = reverse("pushlog", kwargs={"owner": repo.owner.username, "name": repo.name})
    json_base = reverse("json-pushes", kwargs={"owner": repo.owner.username, "name": repo.name})
    context = {
        "repo": repo,
        "tab": "pushlog",
        "filters": filters,
        "json_url": _link(json_base, filters, version=2),
        "atom_url": reverse("pushlog-atom", kwargs={"owner": repo.owner.username, "name": repo.name}),
        "rows": [],
    }
    shown = pushlog.PushFilter(repo, view_for(repo, request.user))
    try:
        query = pushlog_query.parse_query(filters, object_format(repo.disk_path))
        qs = pushlog.filter_pushes(repo, dataclasses.replace(query, start_id=None, end_id=None), shown)
        pushes, newer, older = _page(qs.prefetch_related("ref_updates", "commits"), query)
    except pushlog_query.PushlogQueryError as exc:
        return render(request, "repos/pushlog.html", {**context, "error": str(exc)}, status=400)
    context["rows"] = _rows(repo, pushes, shown, query, json_base)
    context["newer_url"] = _link(here, filters, startID=newer) if newer is not None else None
    context["older_url"] = _link(here, filters, endID=older) if older is not None else None
    return render(request, "repos/pushlog.html", context)


def _rows(repo, pushes: list[Push], shown: pushlog.PushFilter, query: pushlog_query.Query, json_base: str):
    base = reverse("repository", kwargs={"owner": repo.owner.username, "name": repo.name})
    wanted = pushlog_query.ref_names(query.ref) if query.ref else None
    rows = []
    for push in pushes:
        refs = [
            RefMove(
                u.ref,
                u.old,
                u.new,
                u.forced,
                None if is_zero(u.old) or is_zero(u.new) else f"{base}/compare/{u.old}...{u.new}",
            )
            for u in shown.refs(push.ref_updates.all())
        ]
        if wanted and not any(move.ref in wanted for move in refs):
            continue  # its move of that ref is hidden from this viewer
        shas = shown.shas([c.sha for c in push.commits.all()])
        rows.append((push, refs, shas))
    newest = {sha for _push, _refs, shas in rows for sha in shas[::-1][:COMMITS_SHOWN]}
    details = {c.sha: c for c in history.commit_details(repo.disk_path, sorted(newest))}
    return [
        PushRow(
            push,
            refs,
            [details[sha] for sha in shas[::-1][:COMMITS_SHOWN] if sha in details],
            len(shas),
            f"{json_base}?{urlencode({'version': 2, 'full': 1, 'startID': push.pk - 1, 'endID': push.pk})}",
        )
        for push, refs, shas in rows
    ]
