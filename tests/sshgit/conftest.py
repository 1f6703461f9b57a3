"""`ssh_server`: the SSH gateway and a real sshd on a free loopback port, as `make run` starts
them, with a VAR_DIR of their own under the session's tmp dir, on the live test database."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hostsite.processes import StartupError, wait_for_port
from tests import live

SSHD = "/usr/sbin/sshd"
ECHO_SERVE = "tests.sshgit.echo_serve:serve"


@dataclasses.dataclass
class KeyPair:
    path: Path
    key_type: str
    key_data: str
    fingerprint: str


@dataclasses.dataclass
class SshServer:
    host: str
    port: int
    user: str
    var_dir: Path
    socket: Path
    keys_program: Path
    known_hosts: Path
    gateway: live.ManagedProcess
    sshd: live.ManagedProcess
    tmp: Path

    def make_key(self, name: str) -> KeyPair:
        path = self.tmp / f"key-{name}"
        subprocess.run(
            ["ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", name, "-f", str(path)], check=True
        )
        key_type, key_data = path.with_suffix(".pub").read_text().split()[:2]
        out = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{path}.pub"],
            capture_output=True,
            text=True,
            check=True,
        )
        return KeyPair(path, key_type, key_data, out.stdout.split()[1])

    def ssh_argv(self, key: KeyPair) -> list[str]:
        return [
            "ssh",
            "-i",
            str(key.path),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-F",
            "/dev/null",
            "-p",
            str(self.port),
        ]

    def git_env(self, key: KeyPair) -> dict[str, str]:
        """The environment for git over SSH with this key: GIT_SSH_COMMAND pinned to it."""
        return {"GIT_SSH_COMMAND": " ".join(self.ssh_argv(key)), "GIT_SSH_VARIANT": "ssh"}

    def ssh(self, key: KeyPair, *args: str, timeout: float = 30, **kwargs) -> subprocess.CompletedProcess:
        argv = [*self.ssh_argv(key), f"{self.user}@{self.host}", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)


def sshd_required() -> None:
    if not os.access(SSHD, os.X_OK):
        if os.environ.get("HOSTSITE_SSHD_REQUIRED") == "1":
            pytest.fail(f"{SSHD} is missing and HOSTSITE_SSHD_REQUIRED=1 (CI installs openssh-server)")
        pytest.skip(f"{SSHD} is not installed (apt-get install openssh-server)")


@pytest.fixture(scope="module")
def ssh_server(live_env, tmp_path_factory):
    """sshd and a gateway whose sessions only report what reached them (tests.sshgit.echo_serve)."""
    yield from _ssh_server(live_env, tmp_path_factory, serve=ECHO_SERVE)


@pytest.fixture(scope="module")
def ssh_git(live_env, live_web, tmp_path_factory):
    """sshd and a gateway serving git for real (sshgit.session.serve), beside the live web server
    (for the HTTP side of comparisons)."""
    yield from _ssh_server(live_env, tmp_path_factory, serve=None)


def _ssh_server(live_env, tmp_path_factory, *, serve: str | None):
    sshd_required()
    tmp = tmp_path_factory.mktemp("ssh")
    var_dir = tmp / "var"
    var_dir.mkdir()
    # Its own VAR_DIR gives this sshd its host keys and runtime directory; what the web server
    # and the worker share through theirs, the gateway shares too, as under `make run`: the
    # broker's folder (the tasks a push enqueues) and the file cache (refs moved by an SSH push).
    from django.conf import settings

    for shared in ("broker", "cache"):
        (Path(settings.VAR_DIR) / shared).mkdir(parents=True, exist_ok=True)
        (var_dir / shared).symlink_to(Path(settings.VAR_DIR) / shared)
    port = live.free_port()
    env = {**live_env, "VAR_DIR": str(var_dir), "SSH_PORT": str(port), "SSH_LISTEN": "127.0.0.1"}
    result = subprocess.run(
        [live.PY, str(live.BASE_DIR / "manage.py"), "ssh_prepare"],
        env=env,
        cwd=live.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    prepared = json.loads(result.stdout.strip().splitlines()[-1])
    assert "sshd" in prepared, prepared
    socket = Path(prepared["gateway_socket"])
    gateway = live.ManagedProcess(
        "ssh-gateway",
        [
            live.PY,
            str(live.BASE_DIR / "manage.py"),
            "ssh_gateway",
            *(["--serve", serve] if serve else []),
            "--drain-timeout",
            "5",
        ],
        env,
        tmp,
    )
    sshd = None
    try:
        live.processes.wait_for_log(gateway, "listening on", timeout=60)
        sshd = live.ManagedProcess("sshd", prepared["sshd"], env, tmp)
        wait_for_port(port, watch=[sshd, gateway])
    except StartupError as exc:
        for proc in (gateway, sshd):
            if proc is not None:
                proc.stop()
        raise RuntimeError(f"the SSH server did not start: {exc}") from None
    known_hosts = tmp / "known_hosts"
    host_key = (var_dir / "ssh" / "ssh_host_ed25519_key.pub").read_text().split()
    known_hosts.write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    server = SshServer(
        host="127.0.0.1",
        port=port,
        user=prepared["url"].split("//")[1].split("@")[0],
        var_dir=var_dir,
        socket=socket,
        keys_program=socket.parent / "hostsite-keys",
        known_hosts=known_hosts,
        gateway=gateway,
        sshd=sshd,
        tmp=tmp,
    )
    yield server
    sshd.stop()
    gateway.stop()
    shutil.rmtree(socket.parent, ignore_errors=True)
