"""Users pushing to a repository on the live server, for end-to-end tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from repos import services
from repos.models import Role
from tests.factories import UserFactory
from tests.gitutil import git


class Pusher:
    """A user with a write token and a working copy, pushing to the live server."""

    def __init__(self, world, username: str, work: Path, env: dict[str, str]):
        self.world = world
        self.username = username
        self.work = work
        self.env = env
        self.user = UserFactory(username=username)
        self.token = services.token_create(user=self.user, scope="write")[1]

    @property
    def remote(self) -> str:
        return f"http://{self.username}:{self.token}@{self.world.host}/{self.world.repo.full_name}.git"

    def git(self, *args, check=False):
        return git(self.env, *args, cwd=self.work, check=check)

    def commit(self, message: str, name: str = "file.txt") -> str:
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text((path.read_text() if path.exists() else "") + message + "\n")
        self.git("add", name, check=True)
        self.git("commit", "--quiet", "-m", message, check=True)
        return self.git("rev-parse", "HEAD", check=True).stdout.strip()

    def push(self, *refspecs, options=()):
        args = ["push", "--porcelain"]
        for option in options:
            args += ["-o", option]
        return self.git(*args, self.remote, *refspecs)


class World:
    def __init__(self, live_server_url, tmp_path, git_home):
        self.host = live_server_url.removeprefix("http://")
        self.tmp = tmp_path
        self.env = git_home
        owner_user = UserFactory(username="owner")
        self.repo = services.repository_create(owner=owner_user, name="project")
        self.users = {}
        self.owner = self._adopt(owner_user, "owner")
        base = self.owner.work
        git(self.env, "init", "--quiet", "-b", "main", str(base))
        self.base_sha = self.owner.commit("base")
        result = self.owner.push("main")
        assert result.returncode == 0, result.stderr

    def _adopt(self, user, username):
        pusher = Pusher.__new__(Pusher)
        pusher.world, pusher.username, pusher.user = self, username, user
        pusher.work = self.tmp / username
        pusher.env = self.env
        pusher.token = services.token_create(user=user, scope="write")[1]
        self.users[username] = pusher
        return pusher

    def add(self, username: str, role: str | None = None) -> Pusher:
        pusher = Pusher(self, username, self.tmp / username, self.env)
        if role:
            services.membership_set(repo=self.repo, user=pusher.user, role=Role.from_label(role))
        subprocess.run(
            ["git", "clone", "--quiet", pusher.remote, str(pusher.work)],
            env=self.env,
            check=True,
            capture_output=True,
        )
        self.users[username] = pusher
        return pusher

    def refs(self) -> dict[str, str]:
        out = subprocess.run(
            [
                "git",
                "--git-dir",
                str(self.repo.disk_path),
                "for-each-ref",
                "--format=%(refname) %(objectname)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return dict(line.split(" ", 1) for line in out.splitlines())
