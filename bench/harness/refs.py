"""Workspace refs by the thousand, written straight into a repository."""

from __future__ import annotations

import time
from pathlib import Path

from bench.harness.common import Git, MeasureError, SetupError


def ref_format(git: Git, repo: Path) -> str:
    """files or reftable. `rev-parse --show-ref-format` exists from git 2.45; older gits echo
    the option back, and can only have the files backend unless extensions.refStorage says so."""
    out = git.run("--git-dir", str(repo), "rev-parse", "--show-ref-format").strip()
    if out in ("files", "reftable"):
        return out
    try:
        return git.run("--git-dir", str(repo), "config", "--get", "extensions.refStorage").strip() or "files"
    except MeasureError:
        return "files"


def populate_workspaces(git: Git, repo: Path, *, users: int, per_user: int, batch: int = 10_000) -> dict:
    """users x per_user refs refs/users/uNNNNN/rK, written with update-ref --stdin (the
    repository's own config applies: a reflog per ref, as pushes would leave), then packed."""
    commits = git.run("--git-dir", str(repo), "rev-list", "--all").split()
    if not commits:
        raise SetupError(f"{repo} has no commits")
    width = max(5, len(str(users - 1)))
    lines = [
        f"create refs/users/u{u:0{width}d}/r{k} {commits[(u * per_user + k) % len(commits)]}\n"
        for u in range(users)
        for k in range(per_user)
    ]
    fmt_ = ref_format(git, repo)
    t0 = time.monotonic()
    for i in range(0, len(lines), batch):
        try:
            git.run(
                "--git-dir", str(repo), "update-ref", "--stdin", input="".join(lines[i : i + batch]).encode()
            )
        except MeasureError as exc:
            raise SetupError(f"writing workspace refs: {exc}") from None
    written = time.monotonic() - t0
    t0 = time.monotonic()
    # files: everything into packed-refs, loose refs pruned. reftable: compact the tables the
    # batches wrote into one (what auto-compaction converges to).
    args = ["pack-refs", "--all", "--prune"] if fmt_ == "files" else ["pack-refs"]
    try:
        git.run("--git-dir", str(repo), *args)
    except MeasureError as exc:
        raise SetupError(f"git {' '.join(args)}: {exc}") from None
    packed = time.monotonic() - t0
    count = len(git.run("--git-dir", str(repo), "for-each-ref", "--format=x", "refs/users/").splitlines())
    if count != len(lines):
        raise SetupError(f"expected {len(lines)} workspace refs in {repo}, found {count}")
    return {"ref_format": fmt_, "workspace_refs": count, "commits_pointed_at": min(len(commits), len(lines)),
            "write_s": round(written, 1), "pack_s": round(packed, 1), "pack_command": " ".join(args)}  # fmt: skip
