"""Comparing two revisions of a proposal: what changed between them, even across a rebase.

Revision A's changes (A.base..A.head) are first replayed onto revision B's base with a
three-way merge (reviews.mergetree.three_way: `merge-tree --write-tree --merge-base=A.base
B.base A.head`, or its git < 2.40 equivalent), then that tree is diffed against B.head. What
the target branch brought in between (the rebase) cancels out, so a reviewer sees only what the
contributor changed, as Gerrit's patch set compare does. When A's changes do not apply to B's
base, A.head is diffed against B.head instead and the conflicting files are named.

Also `git range-diff` of the two revisions' commits, as text, time-limited and size-capped.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.core.cache import cache

from gitcore.git import stream_git
from reviews import mergetree
from reviews.models import ProposalRevision

RANGE_DIFF_TIMEOUT = 20.0  # seconds
RANGE_DIFF_MAX_BYTES = 2 * 1024 * 1024
_READ = 64 * 1024
_CACHE_VERSION = 1


@dataclass
class Sides:
    """What the interdiff page diffs: `left` (a tree or commit) against B's head."""

    left: str
    right: str
    rebased: bool  # A's changes were replayed onto B's base (the bases differ)
    conflicts: list[str] = field(default_factory=list)  # set: fell back to A.head vs B.head


def sides(repo_path: Path, old: ProposalRevision, new: ProposalRevision) -> Sides:
    """The two sides to diff for revisions old < new. The merge is cached: the same object ids
    always give the same tree (or the same conflicts)."""
    if old.base_sha == new.base_sha:
        return Sides(old.head_sha, new.head_sha, rebased=False)
    parts = [str(_CACHE_VERSION), str(repo_path), old.base_sha, new.base_sha, old.head_sha]
    key = "interdiff:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()
    found = cache.get(key)
    if found is None:
        try:
            tree = mergetree.three_way(
                repo_path, old.base_sha, new.base_sha, old.head_sha, f"revision {old.number}'s changes"
            )
            found = {"tree": tree, "conflicts": []}
        except mergetree.MergeConflict as exc:
            found = {"tree": "", "conflicts": exc.files}
        cache.set(key, found, 7 * 86400)
    if found["conflicts"]:
        return Sides(old.head_sha, new.head_sha, rebased=False, conflicts=list(found["conflicts"]))
    return Sides(found["tree"], new.head_sha, rebased=True)


@dataclass(frozen=True)
class RangeDiff:
    text: str
    truncated: bool


def range_diff(repo_path: Path, old: ProposalRevision, new: ProposalRevision) -> RangeDiff:
    """`git range-diff A.base..A.head B.base..B.head`, cut at RANGE_DIFF_MAX_BYTES. Raises
    GitTimeout past RANGE_DIFF_TIMEOUT (range-diff pairs every commit with every other: a
    proposal of thousands of commits could take minutes)."""
    args = [
        "-c",
        "core.quotePath=false",
        "range-diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        f"{old.base_sha}..{old.head_sha}",
        f"{new.base_sha}..{new.head_sha}",
    ]
    with (
        tempfile.TemporaryFile() as err,
        stream_git(args, repo=repo_path, stderr=err, timeout=RANGE_DIFF_TIMEOUT) as git,
    ):
        chunks, size, cut = [], 0, False
        while chunk := git.stdout.read1(_READ):
            chunks.append(chunk)
            size += len(chunk)
            if size > RANGE_DIFF_MAX_BYTES:
                cut = True  # leaving the block stops git
                break
        if not cut:
            err.seek(0)
            git.check(err.read(4000))
    raw = b"".join(chunks)
    if cut:
        raw = raw[:RANGE_DIFF_MAX_BYTES]
        raw = raw[: raw.rfind(b"\n") + 1]
    return RangeDiff(raw.decode("utf-8", "replace"), cut)
