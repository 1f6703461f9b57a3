from __future__ import annotations

from pathlib import Path

import pytest

from bundles import build, listing
from tests.gitutil import git


@pytest.fixture
def bundle_store(settings):
    """The file backend's directory, shared with the live web server (both read
    BUNDLE_STORAGE from the same environment). Objects a test adds are removed after it."""
    root = Path(settings.BUNDLE_STORAGE["path"])
    assert settings.BUNDLE_STORAGE["backend"] == "file"
    root.mkdir(parents=True, exist_ok=True)
    before = {path for path in root.rglob("*") if path.is_file()}
    yield root
    for path in {path for path in root.rglob("*") if path.is_file()} - before:
        path.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _no_failpoints():
    yield
    build.FAILPOINTS.clear()


@pytest.fixture(autouse=True)
def _fresh_presence_cache():
    """Storage checks the v2 advertisement cached must not outlive the test that made them."""
    listing.forget_presence()
    yield
    listing.forget_presence()


def add_commits(repo_path: Path, work: Path, env: dict[str, str], n: int, *, branch="main", tag=None) -> str:
    """Commit n times in a working copy and fetch the result into the hosted bare repository
    (a fetch runs no hooks: this is the repository changing, not a push being judged)."""
    if not work.exists():
        git(env, "init", "--quiet", "-b", branch, str(work))
    git(env, "checkout", "--quiet", "-B", branch, cwd=work)
    for i in range(n):
        path = work / f"f{i % 3}.txt"
        path.write_text((path.read_text() if path.exists() else "") + f"{branch} line {i} " * 50 + "\n")
        git(env, "add", "-A", cwd=work)
        git(env, "commit", "--quiet", "-m", f"{branch} {i}", cwd=work)
    if tag:
        git(env, "tag", "-a", tag, "-m", tag, cwd=work)
    git(
        env,
        "--git-dir",
        str(repo_path),
        "fetch",
        "--quiet",
        str(work),
        "+refs/heads/*:refs/heads/*",
        "+refs/tags/*:refs/tags/*",
    )
    return git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()


def refs_of(env: dict[str, str], git_dir: Path, *patterns: str) -> dict[str, str]:
    out = git(
        env, "--git-dir", str(git_dir), "for-each-ref", "--format=%(refname) %(objectname)", *patterns
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())
