"""Comparing two revisions the way a review needs it: what `head` brings that `base` lacks.

Three-dot semantics, like GitHub's compare and `git diff base...head`: the commits in
`base..head`, and the diff from their merge base to `head`, so changes made on `base` since
`head` branched off do not show up as reverted. Change proposals reuse this service.
"""

from __future__ import annotations

from dataclasses import dataclass

from repos import browse, diffs
from repos.gittools import merge_base
from repos.visibility import EVERYTHING, View

MAX_COMMITS = 250


@dataclass
class Comparison:
    base: str  # commit ids
    head: str
    merge_base: str | None  # None: no common history (the diff is against the empty tree)
    commits: list[browse.CommitDetail]  # newest first, at most MAX_COMMITS
    commits_truncated: bool
    diff: diffs.Diff | None

    @property
    def identical(self) -> bool:
        return self.base == self.head


def compare(
    repo,
    base: str,
    head: str,
    *,
    max_commits: int = MAX_COMMITS,
    with_diff: bool = True,
    view: View = EVERYTHING,
    **diff_options,
) -> Comparison | None:
    """`base` and `head` are anything browse.resolve_commit takes (branch, tag, full ref, id).
    None when either does not name a commit the viewer may see: a hidden side, base or head,
    answers as an unknown one. diff_options go to repos.diffs.diff."""
    path = repo.disk_path
    base_sha = browse.resolve_commit(path, base, view)
    head_sha = browse.resolve_commit(path, head, view) if base_sha else None
    if not base_sha or not head_sha:
        return None
    commits = browse.log(path, head_sha, exclude=base_sha, limit=max_commits + 1)
    truncated = len(commits) > max_commits
    mb = merge_base(path, base_sha, head_sha)
    diff = diffs.diff(path, mb, head_sha, **diff_options) if with_diff else None
    return Comparison(base_sha, head_sha, mb, commits[:max_commits], truncated, diff)
