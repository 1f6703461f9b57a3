"""Pushing to the live server two ways: with git itself, and as a hand-made receive-pack
request for packs git's own client will not send; then reading what the server kept."""

from __future__ import annotations

import base64
import os
import subprocess
import urllib.request
from pathlib import Path

from repos import services
from tests.factories import UserFactory


def client_env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_TERMINAL_PROMPT": "0",
    }


class Account:
    def __init__(self, username: str, **kwargs):
        self.user = UserFactory(username=username, **kwargs)
        self.token = services.token_create(user=self.user, scope="write")[1]

    def url(self, host: str, repo) -> str:
        return f"http://{self.user.username}:{self.token}@{host}/{repo.full_name}.git"

    @property
    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.user.username}:{self.token}".encode()).decode()


def _pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


def receive_request(commands, pack: bytes, capabilities: str = "report-status side-band-64k") -> bytes:
    """A receive-pack request body as git writes it: `<old> <new> <ref>` commands (capabilities
    after a NUL on the first), a flush-pkt, then the pack."""
    lines = [
        _pkt(f"{old} {new} {ref}".encode() + (b"\0" + capabilities.encode() if i == 0 else b"") + b"\n")
        for i, (old, new, ref) in enumerate(commands)
    ]
    return b"".join(lines) + b"0000" + pack


def read_sideband(body: bytes) -> tuple[bytes, str]:
    """A side-band response: (band 1 bytes, band 2 text)."""
    data, text, pos = b"", b"", 0
    while pos + 4 <= len(body):
        length = int(body[pos : pos + 4], 16)
        payload, pos = body[pos + 4 : pos + max(length, 4)], pos + max(length, 4)
        if payload[:1] == b"\1":
            data += payload[1:]
        elif payload[:1] == b"\2":
            text += payload[1:]
    return data, text.decode("utf-8", "replace")


def git_push(env, work: Path, url: str, *refspecs: str) -> tuple[bool, str]:
    result = subprocess.run(
        ["git", "-C", str(work), "push", "--porcelain", url, *refspecs],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result.returncode == 0, result.stderr + result.stdout


def raw_push(base: str, account: Account, repo, commands, pack: bytes) -> tuple[bool, str]:
    """POST a receive-pack request as git would; the output as git would print it."""
    request = urllib.request.Request(
        f"{base}/{repo.full_name}.git/git-receive-pack",
        data=receive_request(commands, pack),
        method="POST",
        headers={"Content-Type": "application/x-git-receive-pack-request", "Authorization": account.basic},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        status, text = read_sideband(response.read())
    output = "".join(f"remote: {line}\n" for line in text.splitlines())
    return b"unpack ok\n" in status and b"\nng " not in b"\n" + status, output + status.decode()


def server_refs(repo) -> dict[str, str]:
    argv = ["git", "--git-dir", str(repo.disk_path), "for-each-ref", "--format=%(refname) %(objectname)"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def server_has(repo, oid: str) -> bool:
    return (
        subprocess.run(
            ["git", "--git-dir", str(repo.disk_path), "cat-file", "-e", oid], capture_output=True
        ).returncode
        == 0
    )
