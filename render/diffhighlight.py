"""Syntax highlighting and word-level changes for parsed diffs (render.diffs): sets each
line's `html`, which templates/repos/_diff.html shows instead of its text.

The HTML is built here from escaped text only: every piece of line text goes through
html.escape, and the only markup added is <span class="…"> with a class name from Pygments'
fixed table of token types (pygments.token.STANDARD_TYPES) and bare <del>/<ins>. Nothing
Pygments formats is used, so no markup from a lexer can reach the page; stripping the tags and
unescaping gives back the line's text exactly (tests/repos/test_diff_highlight.py).

The lexer is chosen by file name, never by guessing from content. Each side of a hunk (its
context and deleted lines; its context and added lines) is lexed as one text, so a string or
comment spanning lines of the same hunk is coloured right; one that opens above the hunk is
not (hunks are highlighted in isolation, as most forges do: the rest of the file is not read).
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Iterable
from difflib import SequenceMatcher
from functools import lru_cache
from html import escape
from itertools import pairwise

from django.utils.safestring import SafeString, mark_safe
from pygments.lexer import Lexer
from pygments.lexers import find_lexer_class_for_filename
from pygments.lexers._mapping import LEXERS
from pygments.token import STANDARD_TYPES, Token, _TokenType

from render.diffs import Diff, FileDiff, Hunk, Line

# Files whose shown lines hold more text than this are not highlighted (shown escaped, as
# plain text): lexing is linear but not free, and such files are rarely read line by line.
MAX_FILE_CHARS = 256 * 1024
# Lexing costs ~10 µs a token in Pygments: a 5,000-line diff takes seconds. A page highlights
# this much text before answering (~0.1 s, ~600 lines); the rest of a bigger diff is highlighted by a
# Celery task (repos.tasks.highlight_diff) and the next view shows it (repos.diffcache).
PAGE_BUDGET_CHARS = 32 * 1024
# Lines longer than this get no word-level changes (difflib is quadratic in the worst case).
MAX_WORD_DIFF_CHARS = 1000
# Below this similarity a pair of lines is a rewrite: marking every word would only add noise.
MIN_WORD_RATIO = 0.3

_WORDS = re.compile(r"\w+|\s+|[^\w\s]")
Segment = tuple[str, str]  # (css class or "", text)


def _special_names() -> re.Pattern[str]:
    """File-name patterns of Pygments' lexers other than "*.<ext>": exact names (Makefile)
    and globs (Makefile.*, *.html.j2). A name matching none is looked up by its extension."""
    patterns = [p for entry in LEXERS.values() for p in entry[3] if not re.fullmatch(r"\*\.[^*?\[\].]+", p)]
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


_SPECIAL = _special_names()


@lru_cache(maxsize=2048)
def _lexer_by_name(name: str) -> Lexer | None:
    cls = find_lexer_class_for_filename(name)
    if cls is None or cls.name == "Text only":
        return None
    return cls(stripnl=False, ensurenl=False, stripall=False, tabsize=0)


def lexer_for(path: str) -> Lexer | None:
    """The lexer for a file name (None: plain text). Pygments' own lookup tries ~900 patterns
    a call; here it runs once per extension and per special name."""
    name = path.rsplit("/", 1)[-1]
    if _SPECIAL.match(name):
        return _lexer_by_name(name)
    ext = name.rpartition(".")[2] if "." in name else ""
    return _lexer_by_name(f"x.{ext}") if ext else None


@lru_cache(maxsize=512)
def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES and ttype.parent is not None:
        ttype = ttype.parent
    return STANDARD_TYPES.get(ttype, "")


class LexTimeout(Exception):
    """Lexing ran past its deadline: an input some lexer's rules are pathologically slow on."""


def lex_lines(
    lexer: Lexer | None, texts: list[str], *, cpu_limit: float | None = None
) -> list[list[Segment]]:
    """Each text split into classed segments by lexing them together as lines of one text.
    Plain segments when there is no lexer or when Pygments changed the text (it rewrites \\r
    and drops a leading BOM): the segments must always add up to the text. LexTimeout after
    `cpu_limit` seconds of this thread's CPU time (checked between tokens; CPU rather than
    wall time, so a busy machine does not cut lexing short)."""
    plain = [[("", t)] for t in texts]
    if lexer is None or not texts:
        return plain
    # CRLF files: the \r is set aside and given back after lexing, not lost to Pygments.
    crs = [t.endswith("\r") for t in texts]
    texts = [t[:-1] if cr else t for t, cr in zip(texts, crs, strict=True)]
    out: list[list[Segment]] = [[]]
    deadline = None if cpu_limit is None else time.thread_time() + cpu_limit
    for n, (ttype, value) in enumerate(lexer.get_tokens("\n".join(texts) + "\n")):
        if deadline is not None and not n % 256 and time.thread_time() > deadline:
            raise LexTimeout
        cls = _css_class(ttype) if ttype is not Token.Text else ""
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                out.append([])
            if part and out[-1] and out[-1][-1][0] == cls:
                out[-1][-1] = (cls, out[-1][-1][1] + part)  # one span for "  " + "  ", say
            elif part:
                out[-1].append((cls, part))
    lines = out[: len(texts)]
    if len(lines) != len(texts) or any(
        "".join(s for _, s in segs) != t for segs, t in zip(lines, texts, strict=True)
    ):
        return plain
    for segs, cr in zip(lines, crs, strict=True):
        if cr:
            segs.append(("", "\r"))
    return lines


def _changed_spans(old: str, new: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character ranges that differ between two paired lines, compared word by word. The
    common words at both ends are set aside first: most edits are local, and difflib then
    only looks at the middle."""
    if max(len(old), len(new)) > MAX_WORD_DIFF_CHARS:
        return [], []
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    start, limit = 0, min(len(a), len(b))
    while start < limit and a[start] == b[start]:
        start += 1
    end = 0
    while end < limit - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a_mid, b_mid = a[start : len(a) - end], b[start : len(b) - end]
    opcodes = SequenceMatcher(None, a_mid, b_mid, autojunk=False).get_opcodes() if a_mid and b_mid else []
    # Similarity by the visible characters kept: shared spaces alone do not make two lines alike.
    kept = _visible(a[:start]) + _visible(a[len(a) - end :])
    kept += sum(_visible(a_mid[i1:i2]) for op, i1, i2, _, _ in opcodes if op == "equal")
    total = _visible(a) + _visible(b)
    if not total or 2 * kept / total < MIN_WORD_RATIO:
        return [], []
    if not opcodes:  # one side's middle is empty: a pure insertion or deletion
        opcodes = [("replace", 0, len(a_mid), 0, len(b_mid))]
    a_at, b_at = _offsets(a), _offsets(b)
    old_spans, new_spans = [], []
    for op, i1, i2, j1, j2 in opcodes:
        if op == "equal":
            continue
        if i2 > i1:
            old_spans.append((a_at[start + i1], a_at[start + i2]))
        if j2 > j1:
            new_spans.append((b_at[start + j1], b_at[start + j2]))
    return old_spans, new_spans


def _visible(words: list[str]) -> int:
    text = "".join(words)
    return len(text) - text.count(" ") - text.count("\t")


def _offsets(words: list[str]) -> list[int]:
    at, total = [0], 0
    for w in words:
        total += len(w)
        at.append(total)
    return at


def render(segments: Iterable[Segment], spans: list[tuple[int, int]], mark: str) -> SafeString:
    """One line's HTML: escaped segments in token spans, changed ranges in <del> or <ins>."""
    if not spans:
        html_text = "".join(f'<span class="{c}">{escape(t)}</span>' if c else escape(t) for c, t in segments)
        return mark_safe(html_text)  # noqa: S308 - built from html.escape only
    out: list[str] = []
    cuts = sorted({c for span in spans for c in span})
    pos = 0
    for cls, text in segments:
        start = pos
        pos += len(text)
        # Split the segment where a changed range starts or ends.
        bounds = [start, *(c for c in cuts if start < c < pos), pos]
        for lo, hi in pairwise(bounds):
            piece = escape(text[lo - start : hi - start])
            if cls:
                piece = f'<span class="{cls}">{piece}</span>'
            if any(s <= lo and hi <= e for s, e in spans):
                piece = f"<{mark}>{piece}</{mark}>"
            out.append(piece)
    return mark_safe("".join(out).replace(f"</{mark}><{mark}>", ""))  # noqa: S308 - built from html.escape only


def _pairs(hunk: Hunk) -> Iterable[tuple[Line, Line]]:
    """Deleted and added lines that replace each other: a run of deletions followed directly by
    a run of additions, paired in order."""
    lines, i = hunk.lines, 0
    while i < len(lines):
        if lines[i].kind != "del":
            i += 1
            continue
        dels = []
        while i < len(lines) and lines[i].kind == "del":
            dels.append(lines[i])
            i += 1
        adds = []
        while i < len(lines) and lines[i].kind == "add":
            adds.append(lines[i])
            i += 1
        yield from zip(dels, adds, strict=False)


def file_chars(f: FileDiff) -> int:
    return sum(len(line.text) for h in f.hunks for line in h.lines)


def highlight_file(f: FileDiff, *, syntax: bool = True) -> None:
    """Set `html` on every shown line of one file (left empty for files over the cap).
    syntax=False: word-level changes only (a page out of highlighting budget)."""
    if f.binary or file_chars(f) > MAX_FILE_CHARS:
        return
    lexer = lexer_for(f.path) if syntax else None
    for hunk in f.hunks:
        old_side = [line for line in hunk.lines if line.kind in ("context", "del")]
        new_side = [line for line in hunk.lines if line.kind in ("context", "add")]
        segments: dict[int, list[Segment]] = {}
        for side in (old_side, new_side):
            for line, segs in zip(side, lex_lines(lexer, [line.text for line in side]), strict=True):
                segments.setdefault(id(line), segs)  # a context line: its old side (same text)
        spans: dict[int, list[tuple[int, int]]] = {}
        for old, new in _pairs(hunk):
            spans[id(old)], spans[id(new)] = _changed_spans(old.text, new.text)
        for line in hunk.lines:
            if line.kind == "note":
                continue
            line.html = render(
                segments[id(line)], spans.get(id(line), []), "ins" if line.kind == "add" else "del"
            )


def highlight_diff(diff: Diff, *, budget: int | None = None) -> bool:
    """Highlight every file, or, in order, the files that fit in what is left of `budget`
    characters of lines, the others getting word-level changes only. Whether every file was
    highlighted."""
    complete = True
    for f in diff.files:
        size = file_chars(f)
        # Only lexing counts: plain text, binary files and files over the cap cost nothing.
        lexed = not f.binary and size <= MAX_FILE_CHARS and lexer_for(f.path) is not None
        syntax = budget is None or not lexed or size <= budget
        if lexed and syntax and budget is not None:
            budget -= size
        complete = complete and syntax
        highlight_file(f, syntax=syntax)
    return complete
