"""Small real histories for the browsing tests, built with `git -C` and imported the way
`manage.py repo create --import` does (a fetch into the repository's disk path)."""

from __future__ import annotations

from pathlib import Path

from repos.models import Visibility
from sources import importing
from tests.factories import UserFactory
from tests.gitutil import git


class Work:
    """A working copy: write files, commit, branch; then `publish` it as a hosted repository."""

    def __init__(self, path: Path, env: dict[str, str], branch: str = "main"):
        self.path, self.env = path, env
        git(env, "init", "--quiet", "-b", branch, str(path))

    def git(self, *args: str) -> str:
        return git(self.env, *args, cwd=self.path).stdout.strip()

    def commit(self, message: str, files: dict[str, bytes | str | None] | None = None) -> str:
        for name, content in (files or {}).items():
            target = self.path / name
            if content is None:
                self.git("rm", "--quiet", "--", name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
            self.git("add", "--", name)
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def publish(self, owner: str = "olga", name: str = "proj", private: bool = False):
        user = UserFactory(username=owner)
        return importing.import_now(
            owner=user,
            name=name,
            source=str(self.path),
            visibility=Visibility.PRIVATE if private else Visibility.PUBLIC,
        ).repository
