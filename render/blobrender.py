"""The file view's lines: one table row per line, its number and its code side by side, so
a number and its code share a top coordinate by construction (wrapped, empty or long lines
alike), cached by blob id.

Each row is `<tr id="L12"><td class="num"><a href="#L12">12</a></td><td class="code">…</td></tr>`.
The code cell's HTML comes from render.diffhighlight (the same token stream split at newlines
that diffs use): html.escape'd text in spans named from Pygments' fixed table of token
classes, nothing else; the rest of a row is digits.

Lexing costs about 2 µs a character (C, ~0.5 MB/s here): a 5,000-line file takes ~300 ms and
a 1 MB one seconds. So a page lexes at most PAGE_BUDGET_CHARS of a file, from the top (the
rows a reader sees first, and exactly what lexing the whole file would give for them), shows
the rest as escaped plain rows, and asks for the rest through the caller's `later` callback
(repos' file view sends repos.tasks.highlight_blob, which lexes it all into the cache through
`highlight_fully`): the next view is complete. Rows are cached by blob id and lexer (a blob's
content never changes), so a warm page reads neither the blob nor Pygments.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from django.core.cache import cache
from django.utils.safestring import SafeString

from render.diffhighlight import LexTimeout, Segment, lex_lines, lexer_for, render

# Bump when the rows' markup or the highlighting change: old entries are never read.
VERSION = 1
TIMEOUT = 7 * 86400
# ~60 ms of lexing (C): about the first 1,000 lines, more than a screen or two.
PAGE_BUDGET_CHARS = 32 * 1024
# Pygments' regexes can be slow on hostile input: a page gives up after this much CPU time
# lexing (shown plain, the task tries), the task after TASK_CPU_LIMIT_S (plain for good).
PAGE_CPU_LIMIT_S = 0.5
TASK_CPU_LIMIT_S = 30.0
QUEUED_FOR_S = 600
# Token classes static/css/pygments.css gives the text's own colour (Name, Punctuation) or that
# only colour blanks (Whitespace): left out, a C file's rows are 45% smaller (1.7 MB to 0.9 MB
# for 5,000 lines) and look the same.
UNSTYLED = frozenset({"n", "p", "w"})
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rows:
    html: SafeString  # the <tr> rows, no <table>
    lines: int
    complete: bool  # as highlighted as it will get (a page cut at its budget: False)


def split_lines(text: str) -> list[str]:
    """The lines as git counts them: a final newline ends the last line, it starts none. A
    CR before the newline (CRLF files) and a leading byte order mark are not shown."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _styled(segments: list[Segment]) -> list[Segment]:
    """The segments with the classes no style colours made plain, neighbours of one class joined."""
    out: list[Segment] = []
    for cls, text in segments:
        cls = "" if cls in UNSTYLED else cls
        if out and out[-1][0] == cls:
            out[-1] = (cls, out[-1][1] + text)
        else:
            out.append((cls, text))
    return out


def rows_html(lines: list[str], segments: list[list[Segment]]) -> str:
    """One row per line; lines past len(segments) as plain escaped text."""
    out = []
    for n, line in enumerate(lines, 1):
        code = render(_styled(segments[n - 1]), [], "") if n <= len(segments) else escape(line)
        out.append(
            f'<tr id="L{n}"><td class="num"><a href="#L{n}">{n}</a></td><td class="code">{code}</td></tr>'
        )
    return "".join(out)


def highlight_lines(
    lines: list[str], path: str, *, budget: int | None, cpu_limit: float
) -> tuple[list[list[Segment]], bool]:
    """Segments of the leading lines that fit in `budget` characters (all: None), and whether
    that is all there will be (every line, or a lexer that gave up on this file)."""
    lexer = lexer_for(path)
    if lexer is None:
        return [], True
    count, used = len(lines), 0
    if budget is not None:
        for i, line in enumerate(lines):
            used += len(line) + 1
            if used > budget:
                count = i
                break
    try:
        return lex_lines(lexer, lines[:count], cpu_limit=cpu_limit), count == len(lines)
    except LexTimeout:
        log.warning("gave up highlighting %s after %.1f s", path, cpu_limit)
        return [], budget is None


def _key(blob: str, path: str) -> str:
    lexer = lexer_for(path)
    return (
        f"blobrows:{VERSION}:{blob}:"
        + hashlib.sha256((lexer.name if lexer else "").encode()).hexdigest()[:16]
    )


def cached_rows(blob: str, path: str, *, later: Callable[[], None]) -> Rows | None:
    """The rows of a blob shown as `path` from the cache. An incomplete entry calls `later`
    again (at most every QUEUED_FOR_S): the first request's task may have been lost."""
    found = cache.get(_key(blob, path))
    if not isinstance(found, tuple) or found[:1] != (VERSION,):
        return None
    _version, complete, lines, html = found
    if not complete:
        _ask_later(blob, path, later)
    return Rows(SafeString(html), lines, complete)


def file_rows(blob: str, path: str, text: str, *, later: Callable[[], None]) -> Rows:
    """A page's rows for the blob `blob` (whose content is `text`) shown as `path`, once
    cached_rows found none: highlighted within the page's budget, and cached unless the task
    stored its complete rows meanwhile. `later` asks a worker to call `highlight_fully`."""
    lines = split_lines(text)
    segments, complete = highlight_lines(lines, path, budget=PAGE_BUDGET_CHARS, cpu_limit=PAGE_CPU_LIMIT_S)
    html = rows_html(lines, segments)
    cache.add(_key(blob, path), (VERSION, complete, len(lines), html), TIMEOUT)
    if not complete:
        _ask_later(blob, path, later)
    return Rows(SafeString(html), len(lines), complete)


def highlight_fully(blob: str, path: str, text: str, *, syntax: bool = True) -> None:
    """Every line highlighted (or, past TASK_CPU_LIMIT_S or with syntax=False, every line
    plain), replacing an entry a page cut at its budget: final either way."""
    lines = split_lines(text)
    segments: list[list[Segment]] = []
    if syntax:
        segments, _complete = highlight_lines(lines, path, budget=None, cpu_limit=TASK_CPU_LIMIT_S)
    cache.set(_key(blob, path), (VERSION, True, len(lines), rows_html(lines, segments)), TIMEOUT)


def _ask_later(blob: str, path: str, later: Callable[[], None]) -> None:
    if not cache.add(f"{_key(blob, path)}:queued", 1, QUEUED_FOR_S):
        return
    try:  # a page never fails for want of a broker
        later()
    except Exception:
        log.warning("could not ask for the highlighting of %s", blob, exc_info=True)
