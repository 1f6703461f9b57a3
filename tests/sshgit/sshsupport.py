"""What the live git-over-SSH tests share: registering and revoking keys (one place, so the
tests switch to sshgit.services' add/remove functions in one edit), people who reach the live
server both ways (a token over smart HTTP, a key over SSH), and client-side git."""

from __future__ import annotations

import base64
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repos import services as repo_services
from sshgit import services
from sshgit.models import PublicKey
from tests.factories import UserFactory
from tests.sshgit.conftest import KeyPair, SshServer


def key_pair(server: SshServer, name: str) -> KeyPair:
    """The module's key pair of this name, made once: ssh-keygen will not overwrite a file, and
    a module's tests (each with a fresh database) may register the same key again."""
    cache = server.__dict__.setdefault("_pairs", {})
    if name not in cache:
        cache[name] = server.make_key(name)
    return cache[name]


def register_key(user, pair: KeyPair, title: str = "laptop") -> PublicKey:
    """As a person adds a key on /settings/keys (audit row and notification included)."""
    return services.add_user_key(user, title=title, text=f"{pair.key_type} {pair.key_data}")


def register_deploy_key(repo, pair: KeyPair, *, created_by, read_write: bool, title: str = "ci") -> PublicKey:
    return services.add_deploy_key(
        repo,
        acting_user=created_by,
        title=title,
        text=f"{pair.key_type} {pair.key_data}",
        read_write=read_write,
    )


def revoke_key(key: PublicKey) -> None:
    if key.user is not None:
        services.remove_user_key(key.user, key.pk)
    else:
        services.remove_deploy_key(key.repository, acting_user=key.created_by, key_id=key.pk)


def git(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    argv = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def git_bytes(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    argv = ["git", *(["-C", str(cwd)] if cwd else []), *args]
    return subprocess.run(argv, env=env, capture_output=True, timeout=120, check=False)


def refs_of(path: Path) -> dict[str, str]:
    """Every ref of a repository on disk (server side or a client's clone)."""
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


@dataclass
class Person:
    """A user with a write token (smart HTTP) and a registered key (SSH)."""

    user: object
    token: str
    pair: KeyPair
    key: PublicKey
    http_host: str
    server: SshServer
    home_env: dict[str, str]
    # An ssh master connection's socket (multiplex()): its git commands share one connection.
    control: Path | None = None

    @property
    def username(self) -> str:
        return self.user.username  # type: ignore[attr-defined]

    def http_url(self, full_name: str) -> str:
        return f"http://{self.username}:{self.token}@{self.http_host}/{full_name}.git"

    def ssh_url(self, full_name: str) -> str:
        return ssh_url(self.server, full_name)

    def url(self, transport: str, full_name: str) -> str:
        return self.http_url(full_name) if transport == "http" else self.ssh_url(full_name)

    @property
    def env(self) -> dict[str, str]:
        """Client git's environment: the key pinned for SSH, and for HTTP the credentials sent
        up front. git fetches a public repository anonymously unless the server asks for
        credentials (docs/moderation.md), where SSH always knows who the key is: the two are
        compared as the same person only if HTTP sends them every time."""
        basic = base64.b64encode(f"{self.username}:{self.token}".encode()).decode()
        ssh = self.server.git_env(self.pair)
        if self.control is not None:
            ssh["GIT_SSH_COMMAND"] += " " + " ".join(master_options(self.control))
        return {
            **self.home_env,
            **ssh,
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }


def master_options(control: Path, persist: int = 30) -> list[str]:
    return ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}", "-o", f"ControlPersist={persist}"]


@contextlib.contextmanager
def multiplex(people: list[Person]) -> Iterator[None]:
    """Each person's SSH git commands over one master connection of theirs (as many users set
    up): a session per command still, without a key exchange each time. A Unix socket path
    holds ~100 bytes, so the sockets live in a short directory; the masters are ended after."""
    where = Path(tempfile.mkdtemp(prefix="cm", dir="/tmp"))
    for n, who in enumerate(people):
        who.control = where / str(n)
    try:
        yield
    finally:
        for who in people:
            if who.control is not None and who.control.exists():
                argv = [*who.server.ssh_argv(who.pair), *master_options(who.control), "-O", "exit"]
                subprocess.run(
                    [*argv, f"{who.server.user}@{who.server.host}"], capture_output=True, timeout=30
                )
            who.control = None
        shutil.rmtree(where, ignore_errors=True)


def ssh_url(server: SshServer, full_name: str) -> str:
    # The port is in GIT_SSH_COMMAND (SshServer.ssh_argv).
    return f"ssh://{server.user}@{server.host}/{full_name}.git"


def person(server: SshServer, http_host: str, home_env: dict[str, str], username: str, **fields) -> Person:
    user: Any = UserFactory(username=username, **fields)
    token = repo_services.token_create(user=user, scope="write")[1]
    pair = key_pair(server, username)
    return Person(user, token, pair, register_key(user, pair), http_host, server, home_env)


def adopt(server: SshServer, http_host: str, home_env: dict[str, str], user) -> Person:
    token = repo_services.token_create(user=user, scope="write")[1]
    pair = key_pair(server, user.username)
    return Person(user, token, pair, register_key(user, pair), http_host, server, home_env)


def commit(env: dict[str, str], work: Path, message: str, name: str = "file.txt") -> str:
    path = work / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text() if path.exists() else "") + message + "\n")
    for args in (("add", name), ("commit", "--quiet", "-m", message)):
        result = git(env, *args, cwd=work)
        assert result.returncode == 0, result.stderr
    return git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()


def init_work(env: dict[str, str], work: Path) -> None:
    result = git(env, "init", "--quiet", "-b", "main", str(work))
    assert result.returncode == 0, result.stderr


def hostsite_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "hostsite:" in line]
