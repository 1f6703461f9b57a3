"""Patch-ids (`git patch-id --stable`): what a change does, whatever commit carries it. A commit
rebased or cherry-picked without conflicts keeps its patch-id; a squash commit has the patch-id
of the combined diff of the commits it squashed.

Both sides come from the same diff options (`--no-renames`, no external or textconv drivers),
so a commit's patch-id and a combined diff's can be compared."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gitcore.git import run_git

_DIFF_OPTS = ["--no-color", "--no-renames", "--no-ext-diff", "--no-textconv"]


def _patch_ids(repo_path: Path, diff: bytes) -> list[tuple[str, str]]:
    """(patch-id, commit) pairs git patch-id reads off a diff (commit 0{40} for a bare diff)."""
    if not diff.strip():
        return []
    out = run_git(["patch-id", "--stable"], repo=repo_path, input=diff).text
    return [tuple(line.split()) for line in out.splitlines() if line.strip()]  # type: ignore[misc]  # two fields a line


def of_commits(repo_path: Path, shas: Iterable[str]) -> dict[str, str]:
    """commit -> patch-id, for the commits that have one (not merges, not empty commits)."""
    shas = list(dict.fromkeys(shas))
    if not shas:
        return {}
    diff = run_git(
        ["diff-tree", "--stdin", "-p", "--root", *_DIFF_OPTS],
        repo=repo_path,
        input="".join(f"{sha}\n" for sha in shas).encode(),
    ).stdout
    return {commit: patch_id for patch_id, commit in _patch_ids(repo_path, diff)}


def of_range(repo_path: Path, base: str, tip: str) -> str | None:
    """The patch-id of everything between base and tip, as one diff (what a squash makes)."""
    diff = run_git(["diff", *_DIFF_OPTS, base, tip, "--"], repo=repo_path).stdout
    found = _patch_ids(repo_path, diff)
    return found[0][0] if found else None


def of_ranges(repo_path: Path, ranges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """tip -> patch-id of the diff base..tip, for many (tip, base) pairs in one pipeline
    (`diff-tree --stdin` reads "<tip> <base>" as a commit and the parent to diff it with).
    A tip appears once: its base is a function of it here."""
    lines = "".join(f"{tip} {base}\n" for tip, base in dict(ranges).items())
    if not lines:
        return {}
    diff = run_git(["diff-tree", "--stdin", "-p", *_DIFF_OPTS], repo=repo_path, input=lines.encode()).stdout
    return {commit: patch_id for patch_id, commit in _patch_ids(repo_path, diff)}
