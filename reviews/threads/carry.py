"""Carrying threads to another revision: where a thread's lines are in the revision shown, or
that they are gone (outdated).

A thread written on revision R1 at lines a..b of a file (side new: R1's head; side old: R1's
base) is current on R2 when those lines are unchanged in the same file of R2 (R2's head, or
base) and nothing was inserted between them: the -U0 diff of the two blobs is the line map.
Equal blobs map every line to itself; a file renamed in R2's diff is followed by its new name.
One `git cat-file --batch-check` for the blobs and one `git diff -U0` per pair of commits,
all cached by object ids (reviews.threads.gitfiles), so a page shown again runs no git.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from django.core.cache import cache

from reviews.models import ProposalRevision, Side, Thread
from reviews.threads import gitfiles


@dataclass(frozen=True)
class Position:
    """Where a thread is on one revision: its path and lines there, or outdated."""

    path: str
    side: str
    start: int | None = None
    end: int | None = None

    @property
    def current(self) -> bool:
        return self.start is not None


def side_commit(revision: ProposalRevision, side: str) -> str:
    return revision.base_sha if side == Side.OLD else revision.head_sha


def positions(
    repo: Path | str,
    threads: Iterable[Thread],
    shown: ProposalRevision,
    renames: Mapping[str, str] | None = None,
) -> dict[int, Position]:
    """{thread id: its Position on `shown`}. `renames` ({old path: new path}, from the shown
    revision's diff) lets a side-new thread follow a file renamed since it was written."""
    threads = list(threads)
    renames = renames or {}
    found: dict[int, Position] = {
        t.pk: Position(t.path, t.side, t.line_start, t.line_end) for t in threads if t.revision_id == shown.pk
    }
    todo = [t for t in threads if t.revision_id != shown.pk]
    if not todo:
        return found
    # The answer depends on object ids and anchors only, which never change: one cache entry
    # for the whole set, so a page shown again reads one key.
    anchors = [
        (
            t.pk,
            side_commit(t.revision, t.side),
            side_commit(shown, t.side),
            t.path,
            t.side,
            t.line_start,
            t.line_end,
        )
        for t in todo
    ]
    key = (
        "threads:positions:"
        + hashlib.sha256(
            json.dumps([anchors, sorted(renames.items())]).encode("utf-8", "surrogateescape")
        ).hexdigest()
    )
    known = cache.get(key)
    if known is None:
        known = _carry(repo, todo, shown, renames)
        cache.set(key, known, gitfiles.CACHE_SECONDS)
    found.update({pk: Position(*row) for pk, row in known.items()})
    return found


def _carry(repo, todo: list[Thread], shown: ProposalRevision, renames: Mapping[str, str]) -> dict[int, tuple]:
    specs = []
    for t in todo:
        specs.append((side_commit(t.revision, t.side), t.path))
        specs.append((side_commit(shown, t.side), t.path))
        if t.side == Side.NEW and t.path in renames:
            specs.append((side_commit(shown, t.side), renames[t.path]))
    blobs = gitfiles.blobs_at(repo, specs)
    found: dict[int, tuple] = {}
    pairs: dict[int, gitfiles.FilePair] = {}
    for t in todo:
        old_commit, new_commit = side_commit(t.revision, t.side), side_commit(shown, t.side)
        before, path = blobs.get((old_commit, t.path)), t.path
        after = blobs.get((new_commit, path))
        if after is None and t.side == Side.NEW and t.path in renames:
            path = renames[t.path]
            after = blobs.get((new_commit, path))
        if before is None or after is None:
            found[t.pk] = (t.path, t.side, None, None)
        else:
            pairs[t.pk] = gitfiles.FilePair(old_commit, new_commit, t.path, path, before.oid, after.oid)
    hunks = gitfiles.hunks_between(repo, pairs.values())
    by_id = {t.pk: t for t in todo}
    for pk, pair in pairs.items():
        t = by_id[pk]
        mapped = (
            (t.line_start, t.line_end)
            if pair.old_blob == pair.new_blob
            else gitfiles.map_range(hunks[pair.blobs], t.line_start, t.line_end)
        )
        found[pk] = (pair.new_path, t.side, *mapped) if mapped else (t.path, t.side, None, None)
    return found
