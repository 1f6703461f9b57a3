"""The baseline git over SSH is compared with: plain OpenSSH + git-shell, as a small self-hosted
server runs it. A second sshd on its own loopback port and config, a system account whose login
shell is git-shell and whose home holds the bare repository, and an authorized_keys file.

Root only: sshd must run as root to switch to the account, and the account is created with
useradd when missing. The repository and the authorized_keys file are removed by cleanup().
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.harness.common import SetupError
from bench.harness.procs import Processes, free_port, wait_for_port

SSHD = "/usr/sbin/sshd"
GIT_SHELL = "/usr/bin/git-shell"
ACCOUNT = "gitplain"


@dataclass
class PlainSsh:
    port: int
    user: str
    repo: Path
    authorized_keys: Path
    host_key_pub: Path

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{self.repo}"


def ensure_account(name: str = ACCOUNT) -> pwd.struct_passwd:
    """The account, created if missing, with git-shell as its login shell and usable for key
    logins (not locked: sshd without PAM refuses even keys for a "!" password field)."""
    if os.geteuid() != 0:
        raise SetupError("plain OpenSSH + git-shell needs root (sshd switches to the account)")
    for program in (SSHD, GIT_SHELL):
        if not os.access(program, os.X_OK):
            raise SetupError(f"{program} is missing (Debian: apt-get install openssh-server git)")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        argv = [
            "useradd",
            "--system",
            "--create-home",
            "--home-dir",
            f"/home/{name}",
            "--shell",
            GIT_SHELL,
            name,
        ]
        subprocess.run(argv, check=True, capture_output=True)
        entry = pwd.getpwnam(name)
    if entry.pw_shell != GIT_SHELL:
        subprocess.run(["usermod", "--shell", GIT_SHELL, name], check=True, capture_output=True)
    status = subprocess.run(
        ["passwd", "-S", name], capture_output=True, text=True, check=False
    ).stdout.split()
    if len(status) > 1 and status[1] == "L":
        subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)
    home = Path(entry.pw_dir)
    home.mkdir(mode=0o755, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o755)  # noqa: S103 - StrictModes: no group or world write on the home
    return pwd.getpwnam(name)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def sshd_config(ssh_dir: Path, port: int, user: str) -> str:
    """The same transport settings as hostsite's sshd_config (sshgit/sshd.py), with keys from an
    authorized_keys file instead of an AuthorizedKeysCommand and no forced command."""
    lines = [
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {ssh_dir / 'ssh_host_ed25519_key'}",
        f"PidFile {ssh_dir / 'sshd.pid'}",
        "AuthorizedKeysFile .ssh/authorized_keys",
        f"AllowUsers {user}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin no",
        "AcceptEnv GIT_PROTOCOL",
        "PermitUserEnvironment no",
        "AllowAgentForwarding no",
        "AllowTcpForwarding no",
        "X11Forwarding no",
        "PermitTTY no",
        "UsePAM no",
        "PrintMotd no",
        "PrintLastLog no",
        "LogLevel VERBOSE",
        "MaxStartups 100:30:200",
    ]
    return "\n".join(lines) + "\n"


def setup_plain(tmp: Path, master: Path, client_pub: str, procs: Processes) -> PlainSsh:
    """Copy `master` into the account's home (owned by it), authorize `client_pub`, start sshd."""
    entry = ensure_account()
    home = Path(entry.pw_dir)
    repo = home / f"bench-{tmp.name}.git"
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(master, repo, symlinks=True)
    _chown_tree(repo, entry.pw_uid, entry.pw_gid)
    dot_ssh = home / ".ssh"
    dot_ssh.mkdir(mode=0o700, exist_ok=True)
    os.chown(dot_ssh, entry.pw_uid, entry.pw_gid)
    authorized = dot_ssh / "authorized_keys"
    authorized.write_text(client_pub.strip() + "\n")
    os.chmod(authorized, 0o600)
    os.chown(authorized, entry.pw_uid, entry.pw_gid)

    ssh_dir = tmp / "plain-ssh"
    ssh_dir.mkdir(mode=0o700)
    key = ssh_dir / "ssh_host_ed25519_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", "plain", "-f", str(key)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    port = free_port()
    config = ssh_dir / "sshd_config"
    config.write_text(sshd_config(ssh_dir, port, entry.pw_name))
    check = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise SetupError(f"sshd -t refused {config}: {check.stderr.strip()}")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # Debian's privilege separation dir
    child = procs.start(
        "plain-sshd", [SSHD, "-D", "-e", "-f", str(config)], env={"PATH": "/usr/sbin:/usr/bin:/bin"}
    )
    wait_for_port(port, child, "plain sshd")
    return PlainSsh(port, entry.pw_name, repo, authorized, key.with_suffix(".pub"))


def cleanup(plain: PlainSsh | None) -> None:
    """Remove what the run left in the account's home (the account itself stays)."""
    if plain is None:
        return
    shutil.rmtree(plain.repo, ignore_errors=True)
    plain.authorized_keys.unlink(missing_ok=True)
