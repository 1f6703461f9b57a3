"""Crafted Work graphs for the layout and renderer tests: no git, just the shapes."""

from __future__ import annotations

from showwork.layout import layout
from showwork.model import Graph, GraphNode
from showwork.render_text import render_text

NOW = 1_700_000_000
HOUR = 3600
DAY = 86400


def draft(sha, *parents, owner="alice", subject="", labels=(), age=HOUR, url=""):
    return _node(sha, parents, "draft", subject or sha.capitalize(), owner, labels, age, url)


def base(sha, *parents, subject="", labels=()):
    return _node(sha, parents, "base", subject or sha.capitalize(), "", labels, 30 * DAY, "")


def tip(sha, *parents, branch="main", subject=""):
    return _node(sha, parents, "tip", subject or sha.capitalize(), "", (branch,), 10 * DAY, "")


def _node(sha, parents, kind, subject, owner, labels, age, url):
    # A parent is a sha (a direct parent) or (sha, commits elided on the edge).
    edges = tuple((p, 0) if isinstance(p, str) else p for p in parents)
    return GraphNode(
        sha=sha,
        parents=edges,
        kind=kind,
        subject=subject,
        author=owner or "Release Bot",
        when=NOW - age,
        owner=owner,
        labels=tuple(labels),
        url=url or f"/acme/widgets/commit/{sha}",
        short=sha,
    )


def text(*nodes, more=0):
    graph = Graph(list(nodes), more=more)
    return render_text(graph, layout(graph), now=NOW)
