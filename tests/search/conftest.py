"""Repositories with real git content for the search tests: a working copy whose commits are
fetched into the platform's bare repository (no push, so no hooks: the index is what is
tested here; tests/search/test_push_live.py pushes for real)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repos.models import Repository
from search import indexing
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git


class Work:
    def __init__(self, repo: Repository, path: Path, env: dict[str, str]):
        self.repo, self.path, self.env = repo, path, env
        git(env, "init", "--quiet", "-b", "main", str(path))

    def write(self, files: dict, message: str = "change", branch: str = "main") -> str:
        """Write (bytes or str path -> bytes/str content, or None to delete), commit, and
        fetch the branch into the repository; returns the commit's id."""
        for name, content in files.items():
            target = os.path.join(os.fsencode(self.path), os.fsencode(name))
            if content is None:
                git(self.env, "rm", "--quiet", "--", os.fsdecode(target), cwd=self.path)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(content.encode() if isinstance(content, str) else content)
            git(self.env, "add", "--", os.fsdecode(target), cwd=self.path)
        git(self.env, "commit", "--quiet", "--allow-empty", "-m", message, cwd=self.path)
        self.publish(f"refs/heads/{branch}")
        return self.head()

    def head(self) -> str:
        return git(self.env, "rev-parse", "HEAD", cwd=self.path).stdout.strip()

    def publish(self, ref: str, rev: str = "HEAD") -> None:
        git(self.env, "fetch", "--quiet", str(self.path), f"+{rev}:{ref}", cwd=Path(self.repo.disk_path))

    def index(self) -> indexing.Outcome:
        return indexing.index_update(repo=self.repo)


@pytest.fixture
def make_work(tmp_path, git_home):
    made = []

    def make(name: str = "project", *, owner=None, private: bool = False, **kwargs) -> Work:
        owner = owner or UserFactory(username="owner")
        repo = RepositoryFactory(
            owner=owner, name=name, visibility="private" if private else "public", **kwargs
        )
        work = Work(repo, tmp_path / f"work-{name}-{len(made)}", git_home)
        made.append(work)
        return work

    return make
