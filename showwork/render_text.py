"""The Work graph as plain text, for ``curl .../work.txt`` (in the style of ``hg show work``).

Glyphs, two characters per column:

    @   a workspace head (a draft commit that a workspace ref points at)
    *   another draft commit (unfinished work below a head)
    o   a public commit: a canonical branch tip or the base draft work left from
    |   a parent edge;  :  an elided edge (public history collapsed, count printed once)
    / \\ an edge moving one column;  - . ' +  an edge moving further, or fanning out:
        '-' runs sideways, '.' turns it down into a column, ''' turns it out of one,
        '+' is where it crosses a vertical line

Each row reads ``short  subject (owner, age)  labels``; public commits carry no owner or
age. A line between two rows is printed only when something happens there (a fork, a
merge, an elided edge's count, or a node that does not continue the line above it), so a
stack reads as a compact column of commits.
"""

from __future__ import annotations

from showwork.age import commits, describe_age
from showwork.layout import Layout, Link, Row
from showwork.model import Graph, GraphNode


def render_text(graph: Graph, layout: Layout, *, now: int) -> str:
    lines: list[str] = []
    rows = layout.rows
    for index, row in enumerate(rows):
        lines.append(_node_line(row, now))
        if index + 1 < len(rows):
            lines.extend(_gap_lines(row, rows[index + 1]))
    if graph.more:
        lines.append(f"({graph.more} more not shown)")
    return "".join(line + "\n" for line in lines)


def glyph(node: GraphNode) -> str:
    if node.kind != "draft":
        return "o"
    return "@" if node.labels else "*"


def describe(node: GraphNode, now: int) -> str:
    """The row's text after the graph: short hash, subject, who and when, labels."""
    parts = [node.short or node.sha[:12], _one_line(node.subject)]
    text = "  ".join(part for part in parts if part)
    if node.kind == "draft":
        who = node.owner or node.author
        age = describe_age(node.when, now)
        text += f" ({who}, {age})" if who else f" ({age})"
    if node.labels:
        text += "  " + " ".join(node.labels)
    return text


def _one_line(text: str) -> str:
    # A subject is one line by construction, but a raw message must not forge extra rows.
    return " ".join(text.split())


def _node_line(row: Row, now: int) -> str:
    cells = [" "] * (2 * (max([row.column, *(c for c, _ in row.passing)]) + 1))
    for c, elided in row.passing:
        cells[2 * c] = ":" if elided else "|"
    cells[2 * row.column] = glyph(row.node)
    return "".join(cells).rstrip() + "  " + describe(row.node, now)


def _gap_lines(row: Row, below: Row) -> list[str]:
    links = row.links
    forks = [link for link in links if link.start and link.top != link.bottom]
    merges = [link for link in links if not link.start and link.top != link.bottom]
    counts = [link.elided for link in links if link.start and link.elided]
    label = "  (" + ", ".join(commits(n) for n in counts) + ")" if counts else ""
    joined = any(link.bottom == below.column for link in links)
    if not forks and not merges and not counts and (joined or below.column != row.column):
        # Only straight lines: the node rows above and below already show them.
        return []
    if forks and merges:
        # Fanning out of this node and folding into the next one in a single line would
        # cross; draw the fork first, then the merge.
        first = [link if link.start else Link(link.top, link.top, link.elided) for link in links]
        second = [Link(link.bottom, link.bottom, link.elided) if link.start else link for link in links]
        return [(_draw(first) + label).rstrip(), _draw(second)]
    return [(_draw(links) + label).rstrip()]


def _draw(links: list[Link] | tuple[Link, ...]) -> str:
    width = max((max(link.top, link.bottom) for link in links), default=-1) + 1
    cells = [" "] * (2 * width)
    for link in links:
        if link.top == link.bottom:
            cells[2 * link.top] = ":" if link.elided else "|"
    moves = [link for link in links if link.top != link.bottom]
    odd_cells = [min(link.top, link.bottom) * 2 + 1 for link in moves]
    diagonal = all(abs(link.top - link.bottom) == 1 for link in moves) and len(set(odd_cells)) == len(
        odd_cells
    )
    for link in moves:
        top, bottom = link.top, link.bottom
        if diagonal:
            cells[2 * min(top, bottom) + 1] = "\\" if bottom > top else "/"
            continue
        for position in range(2 * min(top, bottom) + 1, 2 * max(top, bottom)):
            _put(cells, position, "-")
        if cells[2 * top] == " ":
            cells[2 * top] = "'"
        if cells[2 * bottom] == " ":
            cells[2 * bottom] = "."
    return "".join(cells).rstrip()


def _put(cells: list[str], position: int, char: str) -> None:
    current = cells[position]
    if current in (" ", char):
        cells[position] = char
    elif current in "|:":
        cells[position] = "+"
