"""Lane layout for the Work graph: one row per commit, one column (lane) per line of work.

The approach of Sapling's renderdag (issue 7, item 2): walk the nodes in display order
(children before parents) keeping a list of columns, each empty or expecting a parent that
a row above still needs to reach. A node takes the column that expects it, so a line of
work stays in its lane; its first parent takes over that column, so stacks draw as
straight lines; and columns are freed when their line ends, so the graph stays as narrow
as the work is parallel rather than growing with the number of heads.

Elided edges (public history collapsed into one edge) never share a column with another
edge: a dashed line must stand for exactly one edge, or its count would be ambiguous.
Direct (solid) edges to the same parent share one column from the point the second child
appears, which is what keeps a base with fifty drafts on it from taking fifty columns.

The result records, per row, everything a renderer draws, so the text, SVG and JSON
renderers never re-derive the geometry and cannot disagree about it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from showwork.model import Graph, GraphNode

# What a column expects: (parent sha, commits elided on the edge), or None when free.
_Want = tuple[str, int] | None


class Link(NamedTuple):
    """A line drawn between a row and the next one.

    A tuple rather than a dataclass: there is one per column per row, and building them
    was most of the layout's time on a 5,000-commit graph.
    """

    top: int  # column at this row
    bottom: int  # column at the next row
    elided: int = 0  # commits skipped by the edge the line belongs to; 0 draws solid
    # True when the line leaves this row's node (one of its parent edges starts here);
    # False when it continues a line that passed beside the node, or merges into the
    # next row's node.
    start: bool = False


@dataclass(frozen=True)
class Row:
    node: GraphNode
    column: int
    # The node's parents the graph shows (all below this row), in parent order.
    parents: tuple[tuple[str, int], ...]
    # Lines crossing this row beside the node: (column, elided).
    passing: tuple[tuple[int, int], ...]
    # Lines from this row to the next, by top then bottom column; empty on the last row.
    links: tuple[Link, ...]


@dataclass(frozen=True)
class Layout:
    rows: tuple[Row, ...]
    columns: int  # the widest row's column count

    def edges(self) -> list[tuple[str, str, int]]:
        """(child sha, parent sha, elided) for every edge drawn, in row order."""
        return [(row.node.sha, sha, elided) for row in self.rows for sha, elided in row.parents]


@dataclass
class _Pending:
    """The previous row, waiting for the next node's column to compute its links."""

    node: GraphNode
    column: int
    parents: tuple[tuple[str, int], ...]
    passing: tuple[tuple[int, int], ...]
    starts: list[tuple[int, int]]  # (column, elided) each parent edge was given
    fresh: set[int]  # columns this node's parents opened (no line above them)
    width: int  # columns in use at this row


def layout(graph: Graph) -> Layout:
    nodes = graph.nodes
    row_of: dict[str, int] = {}
    for index, node in enumerate(nodes):
        row_of.setdefault(node.sha, index)

    columns: list[_Want] = []
    rows: list[Row] = []
    widest = 0
    pending: _Pending | None = None
    for index, node in enumerate(nodes):
        expecting = [c for c, want in enumerate(columns) if want is not None and want[0] == node.sha]
        column = expecting[0] if expecting else _free_column(columns)
        if pending is not None:
            rows.append(_finish(pending, columns, set(expecting), column))
        merging = set(expecting)
        passing = tuple(
            [(c, want[1]) for c, want in enumerate(columns) if want is not None and c not in merging]
        )
        # Trailing columns are trimmed after every row, so the width before the node is
        # the column list's length, and after it the length once its parents are placed.
        width = len(columns)
        for c in expecting:
            columns[c] = None

        parents = _shown_parents(node, index, row_of)
        starts: list[tuple[int, int]] = []
        fresh: set[int] = set()
        for sha, elided in parents:
            target = columns.index((sha, 0)) if elided == 0 and (sha, 0) in columns else None
            if target is None:
                # The first parent that needs a lane continues the node's own, so a
                # stack is a straight line; later ones take the leftmost free lane.
                target = column if columns[column] is None else _free_column(columns)
                columns[target] = (sha, elided)
                fresh.add(target)
            starts.append((target, elided))
        while columns and columns[-1] is None:
            columns.pop()
        width = max(width, len(columns))
        widest = max(widest, width)
        pending = _Pending(node, column, parents, passing, starts, fresh, width)

    if pending is not None:
        rows.append(_finish(pending, columns, set(), -1))
    return Layout(rows=tuple(rows), columns=widest)


def _free_column(columns: list[_Want]) -> int:
    """The leftmost free column, opening a new one on the right if none is."""
    for c, want in enumerate(columns):
        if want is None:
            return c
    columns.append(None)
    return len(columns) - 1


def _shown_parents(node: GraphNode, index: int, row_of: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """Parents drawn as edges: in the graph, below the node, each once.

    A parent above its child (a selection that broke the topological order) would leave a
    column waiting for a row that never comes, so it is dropped like a parent outside the
    graph.
    """
    seen: set[str] = set()
    shown = []
    for sha, elided in node.parents:
        if sha in seen or row_of.get(sha, -1) <= index:
            continue
        seen.add(sha)
        shown.append((sha, max(0, int(elided))))
    return tuple(shown)


def _finish(pending: _Pending, columns: list[_Want], merging: set[int], next_column: int) -> Row:
    """The pending row, with its links down to the next row's node at ``next_column``.

    Columns expecting the next node (``merging``) bend into its column within this gap.
    """

    def below(c: int) -> int:
        return next_column if c in merging else c

    # In column order without sorting them all: the node's column holds no other line
    # (it was expecting the node, and only the node's parents can have taken it since).
    starts = sorted(Link(pending.column, below(c), elided, True) for c, elided in pending.starts)
    links: list[Link] = []
    fresh = pending.fresh
    for c, want in enumerate(columns):
        if c == pending.column:
            links.extend(starts)
            starts = []
        if want is not None and c not in fresh:
            links.append(Link(c, below(c), want[1], False))
    links.extend(starts)
    return Row(
        node=pending.node,
        column=pending.column,
        parents=pending.parents,
        passing=pending.passing,
        links=tuple(links),
    )
