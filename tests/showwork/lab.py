"""Crafted repositories for the Work view: commits with fixed dates in a working copy, put
into the hosted bare repository by fetch (which runs no hooks)."""

from __future__ import annotations

from pathlib import Path

from showwork.layout import layout
from showwork.render_text import render_text
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git

NOW = 1_750_000_000
DAY = 86400


class Lab:
    def __init__(self, tmp_path: Path, env: dict[str, str], *, name: str = "project", **repo_kwargs):
        self.env = dict(env)
        self.owner = UserFactory(username="owner")
        self.repo = RepositoryFactory(owner=self.owner, name=name, **repo_kwargs)
        self.work = tmp_path / f"work-{name}"
        self.clock = NOW - 60 * DAY
        git(self.env, "init", "--quiet", "-b", "main", str(self.work))

    @property
    def bare(self) -> str:
        return str(self.repo.disk_path)

    def git(self, *args, check=True):
        return git(self.env, *args, cwd=self.work, check=check)

    def commit(self, message: str, *, at: int | None = None) -> str:
        self.clock = at if at is not None else self.clock + 3600
        env = {
            **self.env,
            "GIT_AUTHOR_DATE": f"{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"{self.clock} +0000",
        }
        git(env, "commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        return self.git("rev-parse", "HEAD").stdout.strip()

    def at(self, rev: str) -> None:
        self.git("checkout", "--quiet", "--detach", rev)

    def publish(self, ref: str, rev: str = "HEAD") -> str:
        """Point `ref` of the hosted repository at `rev` of the working copy."""
        sha = self.git("rev-parse", rev).stdout.strip()
        self.git("branch", "--force", "publish-tmp", sha)
        git(
            self.env,
            "--git-dir",
            self.bare,
            "fetch",
            "--quiet",
            str(self.work),
            f"+refs/heads/publish-tmp:{ref}",
        )
        return sha

    def delete(self, ref: str) -> None:
        git(self.env, "--git-dir", self.bare, "update-ref", "-d", ref)


def text(graph, now: int = NOW) -> str:
    return render_text(graph, layout(graph), now=now)
