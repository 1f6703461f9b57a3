"""Highlighted diffs, cached in Django's configured cache.

A diff between two object ids never changes (ids name content), so the parsed and highlighted
result, with each file's rows already rendered (render.diffrender), is kept under a key made of
the repository, both ids and the caps it was read with. A page then pays one cache read instead
of `git diff`, Pygments and the rows. What pages attach per request (threads, in Line.after
and FileDiff.after) is set on the copy the cache returns, never stored. Only full object ids
are cached: a ref name or an abbreviation could move.

A diff too big to highlight within a page's budget (render.diffhighlight.PAGE_BUDGET_CHARS) is
cached as shown (the rest with word-level changes only) and a Celery task highlights it all
and replaces the entry: the next view is complete.

Entries are plain tuples and strings, not the dataclasses: unpickling 7,800 Line objects
holding SafeStrings took 300 ms, the tuples take a tenth of that (bench/proposal_page.py).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from django.core.cache import cache
from django.utils.safestring import SafeString

from gitcore import gitdiff
from gitcore.gittools import is_full_id
from render import diffs
from render.diffhighlight import PAGE_BUDGET_CHARS, highlight_diff
from render.diffrender import file_rows
from repos import enqueue

# Bump when Diff, Line, the highlighting or the rows change shape: old entries are never read.
VERSION = 2
TIMEOUT = 7 * 86400
log = logging.getLogger(__name__)


def _key(repo_path, base: str | None, head: str, options: dict, paths: Sequence[str]) -> str:
    parts = [str(VERSION), str(repo_path), base or "root", head, repr(sorted(options.items())), *paths]
    return "diffhl:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def highlighted_diff(
    repo_path: Path | str, base: str | None, head: str, *, paths: Sequence[str] = (), **options
) -> diffs.Diff:
    """gitcore.gitdiff.diff(...) with every line's `html` set (render.diffhighlight) and each file's
    rows rendered, cached when both sides are full object ids."""
    return _highlighted(repo_path, base, head, paths, options)[0]


def rendered_diff(
    render: Callable[[diffs.Diff], str],
    variant: str,
    repo_path: Path | str,
    base: str | None,
    head: str,
    *,
    paths: Sequence[str] = (),
    **options,
) -> SafeString:
    """`render(highlighted_diff(...))`, the page's HTML of the diff, cached beside the diff (a
    partly highlighted one until the task has finished highlighting it): a warm page then
    reads one string instead of unpickling and rendering thousands of rows. `variant` names
    whatever else the HTML depends on (the page's URL in its links, the mode)."""
    cacheable = is_full_id(head) and (base is None or is_full_id(base))
    digest = hashlib.sha256(variant.encode("utf-8", "surrogateescape")).hexdigest()
    key_of = _key(repo_path, base, head, options, paths)
    html_key = f"{key_of}:html:{digest}"
    if cacheable:
        found = cache.get(html_key)
        # A partly highlighted diff's HTML serves until the task has highlighted all of it.
        if isinstance(found, tuple) and (found[0] or not cache.get(f"{key_of}:done")):
            return SafeString(found[1])
    result, complete, key = _highlighted(repo_path, base, head, paths, options)
    html = render(result)
    if key:
        cache.set(html_key, (complete, _plain(html)), TIMEOUT)
    return SafeString(html)


def _highlighted(
    repo_path: Path | str, base: str | None, head: str, paths: Sequence[str], options: dict
) -> tuple[diffs.Diff, bool, str]:
    """(the diff, whether it is completely highlighted, its cache key or "" when uncached)."""
    cacheable = is_full_id(head) and (base is None or is_full_id(base))
    if not cacheable:
        result = gitdiff.diff(repo_path, base, head, paths=paths, **options)
        highlight_diff(result)
        return result, True, ""
    key = _key(repo_path, base, head, options, paths)
    found = cache.get(key)
    if isinstance(found, tuple) and found[:1] == (VERSION,):
        return _unpack(found), bool(found[1]), key
    result = gitdiff.diff(repo_path, base, head, paths=paths, **options)
    complete = highlight_diff(result, budget=PAGE_BUDGET_CHARS)
    cache.set(key, _pack(result, complete), TIMEOUT)
    if not complete and cache.add(f"{key}:queued", 1, 600):
        # At most once in 10 minutes per diff; a page never fails for want of a broker.
        try:
            enqueue.after_commit(
                "repos.tasks.highlight_diff", str(repo_path), base, head, options, list(paths)
            )
        except Exception:  # the page shows what it has either way
            log.warning("could not enqueue the highlighting of %s..%s", base, head, exc_info=True)
    return result, complete, key


def highlight_fully(repo_path: str, base: str | None, head: str, options: dict, paths: list[str]) -> None:
    """The whole diff highlighted, replacing an entry a page cut at its budget."""
    result = gitdiff.diff(repo_path, base, head, paths=paths, **options)
    highlight_diff(result)
    key = _key(repo_path, base, head, options, paths)
    cache.set(key, _pack(result, True), TIMEOUT)
    cache.set(f"{key}:done", 1, TIMEOUT)  # pages render their cached HTML of it again


def _pack(d: diffs.Diff, complete: bool) -> tuple:
    files = []
    for f in d.files:
        hunks = [
            (
                h.old_start,
                h.old_count,
                h.new_start,
                h.new_count,
                h.section,
                [(x.kind, x.text, x.old, x.new, _plain(x.html)) for x in h.lines],
            )
            for h in f.hunks
        ]
        meta = (f.old_path, f.new_path, f.status, f.similarity, f.old_mode, f.new_mode, f.binary)
        counts = (f.additions, f.deletions, f.truncated, f.shown_lines)
        f.rows = file_rows(f)  # type: ignore[attr-defined]  # this page renders them once too
        files.append((meta, counts, f.rows, hunks))  # type: ignore[attr-defined]
    head = (d.base, d.head, d.truncated, d.reason, d.max_bytes, d.max_files, d.left)
    return (VERSION, complete, head, files)


def _plain(text: str) -> str:
    """A SafeString as a plain str: str() of one returns it unchanged, and unpickling 7,800
    SafeStrings costs ten times as much as the same strs."""
    return str.__str__(text)


def _unpack(entry: tuple) -> diffs.Diff:
    _version, _complete, head, packed = entry
    files = []
    for meta, counts, rows, hunks in packed:
        f = diffs.FileDiff(*meta)
        f.additions, f.deletions, f.truncated, f.shown_lines = counts
        f.hunks = [
            diffs.Hunk(
                o_start,
                o_count,
                n_start,
                n_count,
                section,
                # SafeString() rather than mark_safe(), whose lazy-argument check costs 20 µs a call.
                [diffs.Line(kind, text, old, new, SafeString(html)) for kind, text, old, new, html in lines],
            )
            for o_start, o_count, n_start, n_count, section, lines in hunks
        ]
        f.rows = rows  # type: ignore[attr-defined]  # read by render.diffrender.rows_html
        files.append(f)
    base, head_id, truncated, reason, max_bytes, max_files, left = head
    return diffs.Diff(base, head_id, files, truncated, reason, max_bytes, max_files, left)
