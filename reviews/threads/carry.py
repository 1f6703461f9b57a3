"""Carrying threads to another revision: where a thread's lines are in the revision shown, or
that they are gone (outdated).

A thread written on revision R1 at lines a..b of a file (side new: R1's head; side old: R1's
base) is current on R2 when those lines are unchanged in the same file of R2 (R2's head, or
base) and nothing was inserted between them: the -U0 diff of the two blobs is the line map.
Equal blobs map every line to itself; a file renamed in R2's diff is followed by its new name.
One `git cat-file --batch-check` for the blobs and one `git diff` per pair of different blobs,
all cached by object ids (reviews.threads.gitfiles), so a page shown again runs no git.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

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
    todo = [t for t in threads if t.revision_id != shown.pk]
    specs = []
    for t in todo:
        specs.append((side_commit(t.revision, t.side), t.path))
        specs.append((side_commit(shown, t.side), t.path))
        if t.side == Side.NEW and t.path in renames:
            specs.append((side_commit(shown, t.side), renames[t.path]))
    blobs = gitfiles.blobs_at(repo, specs) if specs else {}
    found: dict[int, Position] = {
        t.pk: Position(t.path, t.side, t.line_start, t.line_end) for t in threads if t.revision_id == shown.pk
    }
    pairs: dict[int, tuple[str, str, str]] = {}  # thread id: (old blob, new blob, path on shown)
    for t in todo:
        before = blobs.get((side_commit(t.revision, t.side), t.path))
        path = t.path
        after = blobs.get((side_commit(shown, t.side), path))
        if after is None and t.side == Side.NEW and t.path in renames:
            path = renames[t.path]
            after = blobs.get((side_commit(shown, t.side), path))
        if before is None or after is None:
            found[t.pk] = Position(t.path, t.side)
        else:
            pairs[t.pk] = (before.oid, after.oid, path)
    hunks = gitfiles.hunks_between(repo, [(old, new) for old, new, _path in pairs.values()])
    by_id = {t.pk: t for t in todo}
    for pk, (old, new, path) in pairs.items():
        t = by_id[pk]
        mapped = (
            (t.line_start, t.line_end)
            if old == new
            else gitfiles.map_range(hunks[old, new], t.line_start, t.line_end)
        )
        found[pk] = Position(path, t.side, *mapped) if mapped else Position(t.path, t.side)
    return found
