"""Highlighted diffs, cached in Django's configured cache.

A diff between two object ids never changes (ids name content), so the parsed and highlighted
result is kept under a key made of the repository, both ids and the caps it was read with.
Pages then pay one cache read instead of `git diff` and Pygments. What pages attach per
request (threads, in Line.after and FileDiff.after) is set on the copy the cache returns, never
stored. Only full object ids are cached: a ref name or an abbreviation could move.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from django.core.cache import cache

from repos import diffs
from repos.diffhighlight import highlight_diff

# Bump when Diff, Line or the highlighting changes shape: old entries are then never read.
VERSION = 1
TIMEOUT = 7 * 86400
_FULL_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _key(repo_path, base: str | None, head: str, options: dict, paths: Sequence[str]) -> str:
    parts = [str(VERSION), str(repo_path), base or "root", head, repr(sorted(options.items())), *paths]
    return "diffhl:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def highlighted_diff(
    repo_path: Path | str, base: str | None, head: str, *, paths: Sequence[str] = (), **options
) -> diffs.Diff:
    """repos.diffs.diff(...) with every line's `html` set (repos.diffhighlight), cached when
    both sides are full object ids."""
    cacheable = _FULL_ID.fullmatch(head) is not None and (
        base is None or _FULL_ID.fullmatch(base) is not None
    )
    if not cacheable:
        return highlight_diff(diffs.diff(repo_path, base, head, paths=paths, **options))
    key = _key(repo_path, base, head, options, paths)
    found = cache.get(key)
    if isinstance(found, diffs.Diff):
        return found
    result = highlight_diff(diffs.diff(repo_path, base, head, paths=paths, **options))
    cache.set(key, result, TIMEOUT)
    return result
