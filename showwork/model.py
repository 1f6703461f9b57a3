"""The graph the Work view draws: what the selection produces and the layout consumes.

Pure data, no git and no Django, so the layout and the renderers can be tested on
crafted DAGs and the selection on real repositories, each without the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GraphNode:
    sha: str
    # (parent sha, commits elided on that edge; 0 = a direct parent).
    # Parents not in the graph are dropped by the layout.
    parents: tuple[tuple[str, int], ...]
    # "draft" (unfinished work), "base" (public commit where draft work left the
    # canonical history), "tip" (a canonical branch tip).
    kind: str
    subject: str
    author: str
    when: int  # unix seconds (committer date)
    owner: str = ""  # workspace owner (drafts)
    # Branch names for tips; workspace ref short names (e.g. "alice/topic") for heads.
    labels: tuple[str, ...] = ()
    url: str = ""  # where clicking the node goes (proposal page if any, else commit page)
    short: str = ""  # the display hash prefix (computed by the selection side)


@dataclass
class Graph:
    # Display order: every child before its parents (topological), newest first
    # among independent lines.
    nodes: list[GraphNode]
    more: int = 0  # nodes left out by the cap ("N more")
