"""A history for the web editor's tests, built once per module with real git: text files with
every line ending and encoding the editor keeps, an executable, binaries, a file over the
edit limit, a symbolic link, a submodule, a name that is not UTF-8, and a directory whose tree
holds a legacy mode (100664) that only plumbing can write. Each test gets its own repository
with that history fetched in (one git process)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from repos import services as repo_services
from repos.models import Push, Role
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git
from workspaces.webedit.types import EditRequest, FileChange

BIG = 3000  # bytes: over the limit the tests set (WEB_EDIT_MAX_BYTES = 2048)
NON_UTF8 = b"caf\xe9.txt"
FILES: dict[str, bytes] = {
    "README.md": b"# Project\n\nHello.\n",
    "crlf.txt": b"one\r\ntwo\r\n",
    "mixed.txt": b"a\r\nb\r\nc\n",
    "bom.txt": b"\xef\xbb\xbfwith bom\n",
    "utf16.txt": b"\xff\xfe" + "h\u00e9llo\r\n".encode("utf-16-le"),
    "run.sh": b"#!/bin/sh\necho hi\n",
    "image.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary",
    "latin1.txt": "caf\u00e9\n".encode("latin-1"),
    "oldmac.txt": b"one\rtwo\r",
    "big.txt": b"x" * (BIG - 1) + b"\n",
    "docs/intro.md": b"Intro\n",
    "docs/guide/deep.md": b"Deep\n",
}


def _git(env, *args, cwd=None, input: bytes | None = None) -> str:
    argv = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    return subprocess.run(argv, env=env, input=input, capture_output=True, check=True).stdout.decode().strip()


def build_seed(root: Path) -> dict[str, str]:
    """A non-bare repository whose main holds the history; returns its env and main's commit."""
    home = root / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Seed",
        "GIT_AUTHOR_EMAIL": "seed@example.invalid",
        "GIT_COMMITTER_NAME": "Seed",
        "GIT_COMMITTER_EMAIL": "seed@example.invalid",
    }
    work = root / "seed"
    _git(env, "init", "--quiet", "-b", "main", str(work))
    for name, data in FILES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_bytes(data)
    (work / "run.sh").chmod(0o755)
    os.symlink("README.md", work / "link")
    (work / os.fsdecode(NON_UTF8)).write_bytes(b"non-UTF-8 name\n")
    _git(env, "add", "--all", cwd=work)
    blob = _git(env, "hash-object", "-w", "--stdin", cwd=work, input=b"legacy\n")
    _git(env, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub", cwd=work)
    _git(env, "commit", "--quiet", "-m", "seed", cwd=work)
    # A tree with a legacy mode, written by plumbing (the index would canonicalise it).
    old = _git(
        env,
        "mktree",
        "-z",
        cwd=work,
        input=f"100664 blob {blob}\tlegacy.txt\x00100644 blob {blob}\tplain.txt\x00".encode(),
    )
    listing = subprocess.run(
        ["git", "-C", str(work), "ls-tree", "-z", "HEAD^{tree}"], env=env, capture_output=True, check=True
    ).stdout
    tree = _git(env, "mktree", "-z", cwd=work, input=listing + f"040000 tree {old}\told\0".encode())
    commit = _git(env, "commit-tree", tree, "-p", "HEAD", "-m", "legacy modes", cwd=work)
    _git(env, "update-ref", "refs/heads/main", commit, cwd=work)
    return {"path": str(work), "main": commit}


class Scene:
    """One repository with the seed's history: owner (admin), maint (maintainer), alice and bob
    (readers; alice writes in her workspace), and an outsider with no role."""

    def __init__(self, seed: dict[str, str], git_home: dict[str, str]):
        self.env = git_home
        self.owner = UserFactory(username="owner")
        self.maint = UserFactory(username="maint")
        self.alice = UserFactory(username="alice")
        self.bob = UserFactory(username="bob")
        self.repo = RepositoryFactory(owner=self.owner, name="project")
        repo_services.membership_set(repo=self.repo, user=self.maint, role=Role.MAINTAINER)
        repo_services.membership_set(repo=self.repo, user=self.alice, role=Role.READER)
        repo_services.membership_set(repo=self.repo, user=self.bob, role=Role.READER)
        self.bare = str(self.repo.disk_path)
        self.git("fetch", "--quiet", "--no-tags", seed["path"], "+refs/heads/main:refs/heads/main")
        self.main = seed["main"]

    def git(self, *args) -> str:
        return git(self.env, "-c", "fetch.fsckObjects=false", "--git-dir", self.bare, *args).stdout

    def refs(self) -> dict[str, str]:
        out = self.git("for-each-ref", "--format=%(refname) %(objectname)")
        return dict(line.split(" ", 1) for line in out.splitlines())

    def blob(self, rev: str, path: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", self.bare, "cat-file", "blob", f"{rev}:{path}"],
            env=self.env,
            capture_output=True,
            check=True,
        ).stdout

    def entries(self, rev: str) -> dict[bytes, bytes]:
        """{path: b"<mode> <type> <oid>"} of ls-tree -r, names as bytes."""
        out = subprocess.run(
            ["git", "--git-dir", self.bare, "ls-tree", "-r", "-z", rev],
            env=self.env,
            capture_output=True,
            check=True,
        ).stdout
        return {name: meta for meta, _, name in (r.partition(b"\t") for r in out.split(b"\0") if r)}

    def raw_tree(self, rev: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", self.bare, "cat-file", "tree", rev],
            env=self.env,
            capture_output=True,
            check=True,
        ).stdout

    def show(self, rev: str, fmt: str) -> str:
        return self.git("log", "-1", f"--format={fmt}", rev).rstrip("\n")

    def move_main(self, files: dict[str, bytes], message: str = "moved") -> str:
        """A commit on main changing `files`, as if pushed meanwhile (plumbing, no hooks)."""
        work = Path(self.bare).parent / f"move-{message.replace(' ', '-')}"
        git(self.env, "clone", "--quiet", "-c", "fetch.fsckObjects=false", self.bare, str(work))
        for name, data in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        git(self.env, "-C", str(work), "add", *files)
        git(self.env, "-C", str(work), "commit", "--quiet", "-m", message)
        # Fetched into the repository, as a push would land it, without the platform's hooks.
        self.git("fetch", "--quiet", str(work), "+HEAD:refs/heads/main")
        return self.refs()["refs/heads/main"]


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    return build_seed(tmp_path_factory.mktemp("webedit-seed"))


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.WEB_EDIT_MAX_BYTES = 2048


@pytest.fixture
def scene(seed, git_home) -> Scene:
    return Scene(seed, git_home)


def blob_id(scene: Scene, path: str, rev: str = "refs/heads/main") -> str:
    return scene.git("rev-parse", f"{rev}:{path}").strip()


def request(scene: Scene, *changes: FileChange, user=None, **kwargs) -> EditRequest:
    fields = {
        "repository": scene.repo,
        "user": user or scene.alice,
        "base_ref": "main",
        "base_commit": scene.main,
        "changes": changes,
        "message": "Edit on the web",
        "name": "web-edit",
        "host": "git.example.org:8443",
    }
    fields.update(kwargs)
    return EditRequest(**fields)


def edit(scene: Scene, path: str, content: bytes, **kwargs) -> EditRequest:
    return request(scene, FileChange("edit", path, content, blob_id(scene, path, scene.main)), **kwargs)


def assert_only_changed(scene: Scene, before: str, after: str, changed: set[bytes]) -> None:
    old, new = scene.entries(before), scene.entries(after)
    assert {k: v for k, v in old.items() if k not in changed} == {
        k: v for k, v in new.items() if k not in changed
    }


def assert_nothing_happened(scene: Scene, refs: dict[str, str]) -> None:
    """No ref moved and no push was recorded."""
    assert scene.refs() == refs
    assert not Push.objects.filter(repository=scene.repo).exists()
