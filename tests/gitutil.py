"""Client-side git for tests: real repositories built with `git -C`, never chdir."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(
    env: dict[str, str], *args: str, cwd: Path | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    argv = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=check, timeout=120)


def make_history(path: Path, env: dict[str, str]) -> dict[str, str]:
    """main with three commits, a feature branch, an annotated tag; returns ref -> sha."""
    git(env, "init", "--quiet", "--initial-branch=trunk", str(path))
    for i in range(3):
        (path / "file.txt").write_text(f"line {i}\n")
        git(env, "add", "file.txt", cwd=path)
        git(env, "commit", "--quiet", "-m", f"commit {i}", cwd=path)
    git(env, "tag", "-a", "v1.0", "-m", "release 1.0", cwd=path)
    git(env, "checkout", "--quiet", "-b", "feature", cwd=path)
    (path / "feature.txt").write_text("feature\n")
    git(env, "add", "feature.txt", cwd=path)
    git(env, "commit", "--quiet", "-m", "feature work", cwd=path)
    git(env, "checkout", "--quiet", "trunk", cwd=path)
    out = git(env, "for-each-ref", "--format=%(refname) %(objectname)", cwd=path).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())
