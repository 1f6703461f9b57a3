"""Comparing two revisions the way a review needs it: what `head` brings that `base` lacks.

Three-dot semantics, like GitHub's compare and `git diff base...head`: the commits in
`base..head`, and the diff from their merge base to `head`, so changes made on `base` since
`head` branched off do not show up as reverted. Change proposals reuse this service.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.core.cache import cache

from gitcore import gitdiff
from gitcore.git import GitTimeout, run_git
from gitcore.gittools import is_full_id, merge_base
from render import diffs
from repos import browse, history
from repos.visibility import EVERYTHING, View

MAX_COMMITS = 250
IDS_SECONDS = 7 * 86400


@dataclass
class Comparison:
    base: str  # commit ids
    head: str
    merge_base: str | None  # None: no common history (the diff is against the empty tree)
    commits: list[history.CommitDetail]  # newest first, at most MAX_COMMITS
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
    answers as an unknown one. diff_options go to gitcore.gitdiff.diff."""
    path = repo.disk_path
    base_sha = browse.resolve_commit(path, base, view)
    head_sha = browse.resolve_commit(path, head, view) if base_sha else None
    if not base_sha or not head_sha:
        return None
    commits = history.log(path, head_sha, exclude=base_sha, limit=max_commits + 1)
    truncated = len(commits) > max_commits
    mb = cached_merge_base(path, base_sha, head_sha)
    diff = gitdiff.diff(path, mb, head_sha, **diff_options) if with_diff else None
    return Comparison(base_sha, head_sha, mb, commits[:max_commits], truncated, diff)


def compare_ids(repo, base_sha: str, head_sha: str) -> Comparison | None:
    """compare(repo, base_sha, head_sha, with_diff=False) for two full commit ids, cached: the
    commits between two ids and their merge base never change, and resolving, listing and the
    merge base cost eight git processes a page view. The caller has decided that the viewer
    may see `head_sha` (a page of a proposal's revision)."""
    if not (is_full_id(base_sha) and is_full_id(head_sha)):
        return compare(repo, base_sha, head_sha, with_diff=False)
    key = (
        "compare:"
        + hashlib.sha256(f"{repo.disk_path}\0{base_sha}\0{head_sha}\0{MAX_COMMITS}".encode()).hexdigest()
    )
    found = cache.get(key)
    if isinstance(found, Comparison):
        return found
    result = compare(repo, base_sha, head_sha, with_diff=False)
    if result is not None:
        cache.set(key, result, IDS_SECONDS)
    return result


COUNT_SECONDS = 2.0


def count_commits(repo_path, base_sha: str, head_sha: str) -> int | None:
    """How many commits `base..head` holds (`rev-list --count`), or None when counting takes
    longer than COUNT_SECONDS (a page says "more than" rather than wait); cached by ids."""
    if not (is_full_id(base_sha) and is_full_id(head_sha)):
        return None
    key = "compare-count:" + hashlib.sha256(f"{repo_path}\0{base_sha}\0{head_sha}".encode()).hexdigest()
    found = cache.get(key)
    if isinstance(found, int):
        return found
    try:
        out = run_git(
            ["rev-list", "--count", head_sha, f"^{base_sha}"], repo=repo_path, timeout=COUNT_SECONDS
        )
    except GitTimeout:
        return None
    count = int(out.text.strip() or 0)
    cache.set(key, count, IDS_SECONDS)
    return count


def cached_merge_base(repo_path, base_sha: str, head_sha: str) -> str | None:
    """merge_base of two full ids, cached: it never changes, and on a long history git takes
    a large part of a second to find it."""
    key = "merge-base:" + hashlib.sha256(f"{repo_path}\0{base_sha}\0{head_sha}".encode()).hexdigest()
    found = cache.get(key)
    if isinstance(found, tuple):
        return found[0]
    mb = merge_base(repo_path, base_sha, head_sha)
    if is_full_id(base_sha) and is_full_id(head_sha):
        cache.set(key, (mb,), IDS_SECONDS)
    return mb
