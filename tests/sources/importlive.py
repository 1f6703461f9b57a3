"""What the live import tests share: a generated history and the sources built from it, a
repository on the live server serving a source, and the API and web clients that watch an
import."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

from repos import services
from repos.models import Repository, RepositoryImport, Visibility
from tests.factories import UserFactory
from tests.gitutil import git
from tests.repos.test_live_http import Browser

PASSWORD = "long-enough-passphrase-42"


def history_stream(commits: int, *, seed: int = 12) -> bytes:
    """Text files edited a line at a time, as a project's history is (deltas matter)."""
    rng = random.Random(seed)  # test data, not security
    files = {f"src/f{i:03}.txt": [f"line {j} {rng.random()}\n" for j in range(40)] for i in range(50)}
    out = []
    for c in range(commits):
        name = f"src/f{rng.randrange(50):03}.txt"
        files[name][rng.randrange(40)] = f"edit {c} {rng.getrandbits(64):x}\n"
        data, message = "".join(files[name]).encode(), f"commit {c}\n".encode()
        out += [
            b"commit refs/heads/main\n",
            f"mark :{c + 1}\n".encode(),
            f"committer Dev <dev@example.invalid> {1_500_000_000 + c * 60} +0000\n".encode(),
            f"data {len(message)}\n".encode(),
            message,
            f"from :{c}\n".encode() if c else b"",
            f"M 100644 inline {name}\ndata {len(data)}\n".encode(),
            data,
            b"\n",
        ]
        if c % 1000 == 999:
            out.append(f"reset refs/tags/v{c // 1000}\nfrom :{c + 1}\n\n".encode())
    return b"".join(out)


def source_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_TERMINAL_PROMPT": "0",
    }


def write_big_source(parent: Path, commits: int) -> Path:
    """A bare source of `commits` commits (a tag every thousand), a `dev` branch, and a host's
    internals: 30 refs/pull/*, two refs/remotes/origin/*, three refs/keep-around/*."""
    path = parent / "src.git"
    env = source_env(parent / "home")
    git(env, "init", "--quiet", "--bare", "-b", "main", str(path))
    subprocess.run(
        ["git", "--git-dir", str(path), "fast-import", "--quiet"],
        input=history_stream(commits),
        env=env,
        check=True,
        timeout=300,
    )
    git(env, "--git-dir", str(path), "branch", "dev", "main~100")
    tip = git(env, "--git-dir", str(path), "rev-parse", "main").stdout.strip()
    lines = [f"update refs/pull/{i}/head main~{i}\n" for i in range(1, 31)]
    lines += [f"update refs/remotes/origin/{b} main\n" for b in ("main", "dev")]
    lines += [f"update refs/keep-around/{k} {tip}\n" for k in ("a", "b", "c")]
    subprocess.run(
        ["git", "--git-dir", str(path), "update-ref", "--stdin"],
        input="".join(lines),
        text=True,
        env=env,
        check=True,
    )
    git(env, "--git-dir", str(path), "repack", "-adq")
    return path


def serve(source: Path, owner: str, name: str, *, private: bool = False) -> Repository:
    """A repository on the live server holding `source`'s refs, borrowing its objects."""
    user = UserFactory(username=owner)
    repo = services.repository_create(
        owner=user, name=name, visibility=Visibility.PRIVATE if private else Visibility.PUBLIC
    )
    objects = source / "objects" if (source / "objects").is_dir() else source / ".git" / "objects"
    (repo.disk_path / "objects" / "info" / "alternates").write_text(f"{objects}\n")
    refs = subprocess.run(
        ["git", "--git-dir", str(objects.parent), "for-each-ref", "--format=update %(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "update-ref", "--stdin"], input=refs, text=True, check=True
    )
    head = subprocess.run(
        ["git", "--git-dir", str(objects.parent), "symbolic-ref", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    if head:
        subprocess.run(["git", "--git-dir", str(repo.disk_path), "symbolic-ref", "HEAD", head], check=True)
    return repo


def refs_of(path: Path, *patterns: str) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)", *patterns],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


class Api:
    def __init__(self, base: str, user):
        self.user = user
        self.token = services.token_create(user=user, scope="write")[1]
        self.http = Browser(base)

    def call(self, method: str, path: str, body: dict | None = None):
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = json.dumps(body) if body is not None else None
        status, text, headers = self.http.request(method, path, data, headers)
        return status, (json.loads(text) if text else None), headers


def finished(import_id: int) -> RepositoryImport | None:
    imp = RepositoryImport.objects.get(pk=import_id)
    return None if imp.active else imp


def left_nothing(imp: RepositoryImport, repo_id: int) -> None:
    assert imp.repository_id is None and not Repository.objects.filter(pk=repo_id).exists()
    from repos import storage

    assert not storage.repository_path(repo_id).exists()


def signed_in(base: str, user) -> Browser:
    user.set_password(PASSWORD)
    user.save()
    browser = Browser(base)
    browser.request("GET", "/login")
    status, page, _ = browser.request("POST", "/login", {"username": user.username, "password": PASSWORD})
    assert status == 200 and user.username in page
    return browser
