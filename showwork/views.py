"""Work pages: the graph (HTML and text), one head's stack, short hashes (the dashboard is
showwork.dashboard).

Every repository page starts with repo_or_404: a private repository is a 404 to outsiders.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from datetime import timedelta

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe

from gitcore.git import run_git
from gitcore.gittools import ref_exists, rev_parse, text_ref_map
from repos import statuses
from repos.hooks import refspace
from repos.models import Repository
from repos.views import repo_or_404
from repos.visibility import view_for
from showwork import cache, prefixes, reading, selection
from showwork.layout import layout
from showwork.model import Graph, GraphNode
from showwork.render_svg import render_svg
from showwork.render_text import render_text
from workspaces import refmigration

MAX_CAP = 1000  # Sapling warns above 1,000 commits
USERNAME = re.compile(r"[a-z0-9][a-z0-9-]{0,38}")
_TYPED_PREFIX = re.compile(r"[0-9a-fA-F]{1,64}")


@dataclass(frozen=True)
class Filters:
    user: str | None = None
    branch: str | None = None
    since: timedelta | None = selection.DEFAULT_SINCE
    cap: int = selection.DEFAULT_CAP
    mine: bool = False

    @property
    def older(self) -> bool:
        return self.since is None


def _flag(value) -> bool:
    return str(value or "").lower() in ("1", "true", "yes", "on")


def filters_from(params, viewer) -> Filters:
    """Query parameters: mine=1 (the viewer's own work), user=<name>, branch=<name>, older=1,
    limit=<n> (1..1000)."""
    mine = _flag(params.get("mine")) and viewer is not None and viewer.is_authenticated
    user = viewer.username if mine else (params.get("user") or None)
    if user is not None and not USERNAME.fullmatch(user):
        user = "-"  # not a username: matches no workspace
    branch = params.get("branch") or None
    try:
        cap = min(max(int(params.get("limit", selection.DEFAULT_CAP)), 1), MAX_CAP)
    except ValueError:
        cap = selection.DEFAULT_CAP
    since = None if _flag(params.get("older")) else selection.DEFAULT_SINCE
    return Filters(user=user, branch=branch, since=since, cap=cap, mine=mine)


def work_for(repo: Repository, request, filters: Filters) -> cache.View:
    return cache.work_view(
        repo,
        viewer=request.user,
        user=filters.user,
        branch=filters.branch,
        since=filters.since,
        cap=filters.cap,
    )


def work(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    filters = filters_from(request.GET, request.user)
    view = work_for(repo, request, filters)
    now = int(time.time())
    # Statuses change without a push, so they are read per request (one query for every
    # labelled row: workspace heads and branch tips), never from the graph's cache.
    heads = [n.sha for n in view.graph.nodes if n.labels]
    checks = {sha: c.state for sha, c in statuses.combined_many(repo, heads).items()}
    svg = render_svg(view.graph, view.layout, now=now, checks=checks) if view.graph.nodes else ""
    response = render(
        request,
        "showwork/work.html",
        {
            "repo": repo,
            "tab": "work",
            "svg": mark_safe(svg),  # noqa: S308 - render_svg escapes everything
            "filters": filters,
            "branches": view.branches,
            "more": view.graph.more,
            "count": sum(1 for n in view.graph.nodes if n.kind == "draft"),
        },
    )
    response["X-Showwork-Cache"] = "hit" if view.hit else "miss"
    return response


def work_text(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    view = work_for(repo, request, filters_from(request.GET, request.user))
    text = (
        render_text(view.graph, view.layout, now=int(time.time()))
        if view.graph.nodes
        else "no unfinished work\n"
    )
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["X-Showwork-Cache"] = "hit" if view.hit else "miss"
    return response


def _stack_graph(repo: Repository, ref: str) -> tuple[Graph, str | None]:
    """One head's drafts down to its base (one log --boundary), as a graph; and the base."""
    out = run_git(
        [
            "log",
            "--boundary",
            f"--format={reading.FORMAT}",
            "--abbrev=4",
            ref,
            "--not",
            "--branches",
            "--tags",
            "--",
        ],
        repo=repo.disk_path,
    ).stdout
    drafts, bases = reading.parse_log(out)
    label = ref.removeprefix(refspace.WORKSPACES)
    base_url = f"/{repo.owner.username}/{repo.name}/commit/"
    head = rev_parse(repo.disk_path, ref, peel=None)
    nodes = {}
    for sha, c in {**drafts, **bases}.items():
        kind = "draft" if sha in drafts else "base"
        parents = tuple((p, 0) for p in c.parents if p in drafts or p in bases) if kind == "draft" else ()
        nodes[sha] = GraphNode(
            sha,
            parents,
            kind,
            c.subject,
            c.author,
            c.when,
            owner=label.split("/", 1)[0],
            labels=(label,) if sha == head else (),
            url=base_url + sha,
        )
    refs = reading.read_refs(repo, user=label.split("/", 1)[0])
    width = prefixes.common_width(
        [c.abbrev for c in (*drafts.values(), *bases.values())], refs.branches, refs.tags, list(nodes)
    )

    ordered = selection.topo_order({sha: replace(n, short=sha[:width]) for sha, n in nodes.items()})
    first_base = next((p for c in drafts.values() for p in c.parents if p in bases), None)
    return Graph(ordered), first_base


def stack(request, owner: str, name: str, ref: str):
    """`hg show stack` for one workspace head: its drafts down to the base, and how far the
    target branch has moved since."""
    repo = repo_or_404(request, owner, name)
    full = refspace.WORKSPACES + ref
    if "/" not in ref or not view_for(repo, request.user).ref_visible(full):
        raise Http404
    if not ref_exists(repo.disk_path, full):
        # A nameless head renamed to the current layout: links to its old name still work.
        renamed = refmigration.renamed_to(repo, full)
        if renamed is not None and refspace.owner_of(renamed) == refspace.owner_of(full):
            return redirect("work-stack", repo.owner.username, repo.name, refspace.workspace_label(renamed))
        raise Http404
    graph, base = _stack_graph(repo, full)
    branches = {name.removeprefix(refspace.HEADS) for name in text_ref_map(repo.disk_path, refspace.HEADS)}
    target = refspace.nameless_branch(full, branches) or repo.default_branch
    tip = rev_parse(repo.disk_path, refspace.branch_ref(target))
    if not tip:
        target, tip = repo.default_branch, rev_parse(repo.disk_path, f"refs/heads/{repo.default_branch}")
    ahead = None
    if base and tip:
        ahead = int(run_git(["rev-list", "--count", f"{base}..{tip}"], repo=repo.disk_path).text.strip() or 0)
    svg = render_svg(graph, layout(graph), now=int(time.time())) if graph.nodes else ""
    return render(
        request,
        "showwork/stack.html",
        {
            "repo": repo,
            "tab": "work",
            "ref": ref,
            "svg": mark_safe(svg),  # noqa: S308 - escaped by render_svg
            "drafts": sum(1 for n in graph.nodes if n.kind == "draft"),
            "target": target,
            "ahead": ahead,
            "base": base,
        },
    )


def short_hash(request, owner: str, name: str, prefix: str):
    """A unique prefix opens the commit; an ambiguous one lists the candidates; else 404.
    Only commits the viewer may see count: a hidden commit neither opens nor makes a prefix
    ambiguous, so /c/ cannot tell hidden work from no work (or from a malformed prefix)."""
    repo = repo_or_404(request, owner, name)
    typed = request.GET.get("prefix")  # the form of the page below, to try another prefix
    if isinstance(typed, str) and typed.strip():
        if not _TYPED_PREFIX.fullmatch(typed.strip()):
            return _no_such_prefix(request, repo, typed.strip())
        return redirect(reverse("short-hash", args=[repo.owner.username, repo.name, typed.strip()]))
    view = view_for(repo, request.user)
    found = prefixes.candidates(repo.disk_path, prefix)
    if found and view.restricts:
        hidden = view.hidden_objects(found)
        found = [sha for sha in found if sha not in hidden]
    if not found:
        return _no_such_prefix(request, repo, prefix)
    if len(found) == 1:
        return redirect(
            reverse("repo-commit", kwargs={"owner": repo.owner.username, "name": repo.name, "sha": found[0]})
        )
    out = run_git(
        ["log", "--no-walk", "--format=%H%x00%an%x00%ct%x00%s", "--stdin"],
        repo=repo.disk_path,
        input="".join(s + "\n" for s in found).encode(),
    ).stdout.decode("utf-8", "replace")
    rows = []
    for line in out.splitlines():
        sha, author, when, subject = line.split("\0", 3)
        rows.append(
            {
                "sha": sha,
                "author": author,
                "when": int(when or 0),
                "subject": subject,
                "url": reverse(
                    "repo-commit", kwargs={"owner": repo.owner.username, "name": repo.name, "sha": sha}
                ),
            }
        )
    return render(
        request,
        "showwork/candidates.html",
        {"repo": repo, "tab": "work", "prefix": prefix.lower(), "rows": rows},
        status=300,
    )


def _no_such_prefix(request, repo, prefix: str):
    """One page and one status (404) for a malformed, too short, unknown or hidden prefix, so
    /c/ tells nobody which of them it was; it only says what a usable prefix is."""
    return render(
        request,
        "showwork/short_hash_missing.html",
        {
            "repo": repo,
            "tab": "commits",
            "prefix": prefix[:80],
            "min_length": prefixes.MIN_WIDTH,
            "commits_url": reverse("repo-commits-default", args=[repo.owner.username, repo.name]),
        },
        status=404,
    )
