"""What the in-process import tests share: a source repository laid out as a host keeps it,
the client environment that writes it, and a staff member's queued import."""

from __future__ import annotations

import subprocess
from pathlib import Path

from repos.models import RepositoryImport
from sources import import_requests
from tests.gitutil import git

SECRET = "s3cret-token-4711"  # a test credential, checked for where it must not be


def refs_of(path: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def client_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "A",
        "GIT_AUTHOR_EMAIL": "a@x.invalid",
        "GIT_COMMITTER_NAME": "C",
        "GIT_COMMITTER_EMAIL": "c@x.invalid",
    }


def write_hosted_source(parent: Path) -> Path:
    """A repository as a host keeps it: the project (trunk, dev, two tags) and the host's
    internals (pull requests, remote-tracking branches, keep-around refs, a stash)."""
    path = parent / "src"
    env = client_env(path.parent / "home")
    git(env, "init", "--quiet", "-b", "trunk", str(path))
    for i in range(3):
        (path / "f.txt").write_text(f"{i}\n")
        git(env, "add", "f.txt", cwd=path)
        git(env, "commit", "--quiet", "-m", f"c{i}", cwd=path)
    git(env, "tag", "-a", "v1", "-m", "one", cwd=path)
    git(env, "tag", "v2", cwd=path)
    git(env, "branch", "dev", cwd=path)
    head = git(env, "rev-parse", "HEAD", cwd=path).stdout.strip()
    for ref in [
        "refs/pull/1/head",
        "refs/pull/1/merge",
        "refs/pull/2/head",
        "refs/remotes/origin/trunk",
        f"refs/keep-around/{head}",
        "refs/stash",
    ]:
        git(env, "update-ref", ref, head, cwd=path)
    return path


def queued(staff, source: Path, name: str = "p", **kwargs) -> RepositoryImport:
    return import_requests.import_request(requester=staff, name=name, source=str(source), **kwargs)
