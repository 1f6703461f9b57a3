"""A repository with history built by real git: a contributor's workspace refs and the target
branch are fetched into the bare repository (fetching runs no receive hooks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repos import services as repo_services
from repos.models import Role
from tests.eager import run_followers
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git


class Scene:
    def __init__(self, tmp_path: Path, env: dict[str, str]):
        self.env = env
        self.owner = UserFactory(username="owner", display_name="Olive Owner")
        self.alice = UserFactory(username="alice", display_name="Alice Author")
        self.maint = UserFactory(username="maint", display_name="Max Maintainer", email="max@example.invalid")
        self.bob = UserFactory(username="bob")
        self.repo = RepositoryFactory(owner=self.owner, name="project")
        repo_services.membership_set(repo=self.repo, user=self.maint, role=Role.MAINTAINER)
        repo_services.membership_set(repo=self.repo, user=self.bob, role=Role.READER)
        self.work = tmp_path / "work"
        git(env, "init", "--quiet", "-b", "main", str(self.work))
        self.write({"a.txt": "one\ntwo\nthree\n", "keep.txt": "keep\n"})
        self.commit("base")
        self.publish("main")

    @property
    def bare(self) -> str:
        return str(self.repo.disk_path)

    def git(self, *args, check=True):
        return git(self.env, *args, cwd=self.work, check=check)

    def write(self, files: dict[str, str | None]) -> None:
        for name, text in files.items():
            path = self.work / name
            if text is None:
                self.git("rm", "--quiet", name)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self.git("add", name)

    def commit(
        self, message: str, files: dict[str, str | None] | None = None, *, author: str | None = None
    ) -> str:
        if files:
            self.write(files)
        extra = ["--author", author] if author else []
        self.git("commit", "--quiet", "--allow-empty", "-m", message, *extra)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def checkout(self, branch: str, start: str | None = None) -> None:
        self.git("checkout", "--quiet", *(["-B", branch, start] if start else [branch]))

    def publish(self, branch: str, ref: str | None = None) -> str:
        """Put the local branch into the bare repository under `ref` (default: the same branch)."""
        ref = ref or f"refs/heads/{branch}"
        git(
            self.env,
            "--git-dir",
            self.bare,
            "fetch",
            "--quiet",
            str(self.work),
            f"+refs/heads/{branch}:{ref}",
        )
        return self.tip(ref)

    def tip(self, ref: str) -> str:
        return git(self.env, "--git-dir", self.bare, "rev-parse", ref).stdout.strip()

    def show(self, rev: str, fmt: str) -> str:
        return git(self.env, "--git-dir", self.bare, "log", "-1", f"--format={fmt}", rev).stdout.rstrip("\n")

    def file(self, rev: str, name: str) -> str:
        return git(self.env, "--git-dir", self.bare, "show", f"{rev}:{name}").stdout


@pytest.fixture
def scene(tmp_path, git_home) -> Scene:
    return Scene(tmp_path, git_home)


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple[str, tuple]]:
    """Celery tasks the code under test enqueued, as (name, args), instead of sending them: tests
    that run on-commit callbacks in a rolled-back transaction must not leave real messages for
    the session's worker. The tasks that follow a push (proposals among them) run at once."""
    return run_followers(monkeypatch)
