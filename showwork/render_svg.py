"""The Work graph as an inline SVG for the HTML page (issue 7, item 3).

Decision: the row text (hash, branch labels, subject, owner, age) is drawn inside the SVG,
not in an HTML table beside it. An HTML table only lines up with the graph while the
browser's font metrics, zoom and wrapping agree with a fixed row height; inside one SVG the
alignment holds by construction. It also lets each row be one link: the node, its text
and a full-width hit area are wrapped in one ``<a>``, so the row is one click target and
one tab stop with an accessible name (``aria-label`` and ``<title>``: short hash and
subject). The template just inserts the returned markup (``|safe``); every string from a
commit or a user is escaped here, and a URL that is neither ``/``-relative nor http(s)
becomes ``#``.

Colours come from CSS classes in ``static/css/showwork.css`` (site variables, with a
``prefers-color-scheme: dark`` block); presentation attributes with ``currentColor`` keep
the graph legible if that stylesheet is missing.

Rows are ``ROW_HEIGHT`` apart, except that a gap where elided edges start is
``COUNT_HEIGHT`` taller and carries their count ("120 commits") in the text column, the
way the text rendering prints ``:  (120 commits)`` on a line of its own.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from showwork.age import commits, describe_age
from showwork.layout import Layout, Row
from showwork.model import Graph, GraphNode

ROW_HEIGHT = 28
COUNT_HEIGHT = 18
COLUMN_WIDTH = 16
PADDING = 8
RADIUS = 5
# Wide enough for most subjects in one row; the full subject stays in the <title>.
SUBJECT_CHARS = 72
# An estimate of the text's advance at the stylesheet's 13px, to size the SVG.
CHAR_WIDTH = 7.2

# Marks for a row's combined commit status (the states of repos.statuses; no import, so the
# renderer stays free of Django, as the model is).
CHECK_MARKS = {"success": "\u2713", "failure": "\u2717", "error": "\u2717", "pending": "\u25cf"}

# Characters XML 1.0 forbids, and lone surrogates from undecodable commit messages.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_SPACE = re.compile(r"\s")  # what str.isspace() says, without a Python call per character


def render_svg(graph: Graph, layout: Layout, *, now: int, checks: Mapping[str, str] | None = None) -> str:
    """`checks`: the combined commit status of some of the graph's commits (sha -> state),
    drawn as a mark after the row's labels and named in its accessible name."""
    checks = checks or {}
    rows = layout.rows
    ys = row_centers(layout)
    text_x = graph_width(layout) + 4
    height = (ys[-1] + ROW_HEIGHT // 2) if rows else 0
    if graph.more:
        height += ROW_HEIGHT
    states = [_check(checks.get(row.node.sha, "")) for row in rows]
    texts = [_row_text(row.node, now, state) for row, state in zip(rows, states, strict=True)]
    chars = max((sum(len(part) + 1 for _, part in text) for text in texts), default=0)
    width = int(text_x + chars * CHAR_WIDTH + PADDING)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sw-graph" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="group" aria-label="Work graph" fill="currentColor">'
    ]
    out.extend(_edges(layout, ys))
    out.extend(_counts(layout, ys, text_x))
    for row, y, text, state in zip(rows, ys, texts, states, strict=True):
        out.append(_row(row, y, text, width, text_x, state))
    if graph.more:
        out.append(
            f'<text class="sw-more" x="{text_x}" y="{height - ROW_HEIGHT // 2}" dy="0.35em">'
            f"{graph.more} more not shown</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def graph_width(layout: Layout) -> int:
    """Width of the lanes, where the text column starts."""
    return 2 * PADDING + layout.columns * COLUMN_WIDTH


def row_centers(layout: Layout) -> list[int]:
    """The y of each row's node; gaps where elided edges start are taller."""
    ys: list[int] = []
    y = ROW_HEIGHT // 2
    for row in layout.rows:
        ys.append(y)
        y += ROW_HEIGHT + (COUNT_HEIGHT if _elided_starts(row) else 0)
    return ys


def safe_url(url: str) -> str:
    """A link target the page may carry: site-relative or http(s), anything else is ``#``."""
    if not url or _UNSAFE.search(url) or _SPACE.search(url):
        return "#"
    if url.startswith("/"):
        # "//host" and "/\host" leave the site (browsers read a backslash as a slash).
        return "#" if url[1:2] in ("/", "\\") else url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "#"
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else "#"


def _x(column: int) -> float:
    return PADDING + column * COLUMN_WIDTH + COLUMN_WIDTH / 2


def _segment(top: int, bottom: int, y1: int, y2: int) -> str:
    """Path commands from the current point (top column, y1) down to (bottom column, y2)."""
    if top == bottom:
        return f"V{y2}"
    middle = (y1 + y2) / 2
    return f"C{_x(top):g} {middle:g} {_x(bottom):g} {middle:g} {_x(bottom):g} {y2}"


def _edges(layout: Layout, ys: list[int]) -> list[str]:
    rows = layout.rows
    solid = []
    # Straight stretches of a column become one vertical each (through the nodes on it,
    # which are drawn on top): a column per row each would make a long graph's SVG
    # megabytes of "M x y V y".
    runs: dict[int, list[int]] = {}  # column -> [top y, bottom y] of its open stretch
    for index, row in enumerate(rows[:-1]):
        y1, y2 = ys[index], ys[index + 1]
        for link in row.links:
            if link.elided:
                continue
            if link.top != link.bottom:
                solid.append(f"M{_x(link.top):g} {y1}" + _segment(link.top, link.bottom, y1, y2))
                continue
            run = runs.get(link.top)
            if run is not None and run[1] == y1:
                run[1] = y2
                continue
            if run is not None:
                solid.append(f"M{_x(link.top):g} {run[0]}V{run[1]}")
            runs[link.top] = [y1, y2]
    solid.extend(f"M{_x(column):g} {top}V{bottom}" for column, (top, bottom) in sorted(runs.items()))
    out = []
    if solid:
        out.append(f'<path class="sw-edge" fill="none" stroke="currentColor" d="{" ".join(solid)}"/>')
    # One path per elided edge, so the dashes run on unbroken and each dashed line is one edge.
    # Where each column's line goes on from a row (the first link that continues it), looked
    # up rather than searched for on every row an edge passes.
    onward = [{link.top: link.bottom for link in reversed(row.links) if not link.start} for row in rows]
    for index, row in enumerate(rows[:-1]):
        for link in row.links:
            if link.start and link.elided:
                d = _follow(layout, ys, onward, index, link.top, link.bottom)
                out.append(
                    f'<path class="sw-edge sw-elided" fill="none" stroke="currentColor"'
                    f' stroke-dasharray="4 3" d="{d}"><title>{commits(link.elided)}</title></path>'
                )
    return out


def _follow(
    layout: Layout, ys: list[int], onward: list[dict[int, int]], index: int, top: int, bottom: int
) -> str:
    """The path of an edge leaving row ``index``: down its column until it bends into its parent.

    Elided edges own their column, so the line continuing in that column is this edge's,
    and it ends where its link lands on the next row's node.
    """
    rows = layout.rows
    d = [f"M{_x(top):g} {ys[index]}"]
    # A straight stretch is one V however many rows it passes: a V per row made an old
    # release branch's dashed edge thousands of commands, the page half a megabyte.
    straight_to: int | None = None
    while True:
        if top == bottom:
            straight_to = ys[index + 1]
        else:
            if straight_to is not None:
                d.append(f"V{straight_to}")
                straight_to = None
            d.append(_segment(top, bottom, ys[index], ys[index + 1]))
        index += 1
        if bottom == rows[index].column or index + 1 >= len(rows):
            if straight_to is not None:
                d.append(f"V{straight_to}")
            return " ".join(d)
        top = bottom
        bottom = onward[index].get(top, top)


def _counts(layout: Layout, ys: list[int], text_x: int) -> list[str]:
    out = []
    for index, row in enumerate(layout.rows):
        counts = _elided_starts(row)
        if counts:
            y = ys[index] + ROW_HEIGHT // 2 + COUNT_HEIGHT // 2
            label = ", ".join(commits(n) for n in counts)
            out.append(f'<text class="sw-count" x="{text_x}" y="{y}" dy="0.35em">{label}</text>')
    return out


def _elided_starts(row: Row) -> list[int]:
    return [link.elided for link in row.links if link.start and link.elided]


def _check(state: str) -> str:
    """A state the page knows how to draw, else "" (class names are not escaped)."""
    return state if state in CHECK_MARKS else ""


def _row_text(node: GraphNode, now: int, check: str = "") -> list[tuple[str, str]]:
    """(CSS class, text) pieces of a row, in reading order."""
    parts = [("sw-hash", node.short or node.sha[:12])]
    parts.extend(("sw-label", label) for label in node.labels)
    if check:
        parts.append((f"sw-check sw-check-{check}", CHECK_MARKS[check]))
    subject = " ".join(node.subject.split())
    if len(subject) > SUBJECT_CHARS:
        subject = subject[: SUBJECT_CHARS - 1] + "\u2026"
    parts.append(("sw-subject", subject))
    if node.kind == "draft":
        who = node.owner or node.author
        age = describe_age(node.when, now)
        parts.append(("sw-meta", f"{who} \u00b7 {age}" if who else age))
    return [(cls, text) for cls, text in parts if text]


def _row(row: Row, y: int, text: list[tuple[str, str]], width: int, text_x: int, check: str = "") -> str:
    node = row.node
    public = node.kind != "draft"
    name = _clean(f"{node.short or node.sha[:12]} {' '.join(node.subject.split())}".strip())
    if check:
        name += f" (checks: {'failure' if check == 'error' else check})"
    spans = " ".join(f'<tspan class="{cls}">{_esc(part)}</tspan>' for cls, part in text)
    circle_fill = 'fill="none" stroke="currentColor"' if public else 'fill="currentColor"'
    return (
        f'<a class="sw-row {"sw-public sw-" + _esc(node.kind) if public else "sw-draft"}"'
        f' href="{_esc(safe_url(node.url))}" tabindex="0" aria-label="{_esc(name)}">'
        f"<title>{_esc(name)}</title>"
        f'<rect class="sw-hit" x="0" y="{y - ROW_HEIGHT // 2}" width="{width}" height="{ROW_HEIGHT}"'
        f' fill="transparent"/>'
        f'<circle class="sw-node" cx="{_x(row.column):g}" cy="{y}" r="{RADIUS}" {circle_fill}/>'
        f'<text x="{text_x}" y="{y}" dy="0.35em">{spans}</text>'
        "</a>"
    )


def _clean(text: str) -> str:
    return _UNSAFE.sub("\ufffd", text)


def _esc(text: str) -> str:
    return html.escape(_clean(text), quote=True)
