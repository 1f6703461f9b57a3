"""Everything OpenSSH needs to serve git for us: host keys, the SSH account, the two programs
in a directory sshd accepts, sshd_config, and the argv to run it.

sshd runs an AuthorizedKeysCommand only if it, and every directory above it, is root-owned and
not group- or world-writable (safe_path() in OpenSSH's misc.c). So as root the programs are
copied into /run/hostsite-ssh/<hash of VAR_DIR>/, which also holds the gateway's socket;
unprivileged, no such directory can be made, and prepare() says which path fails.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from django.conf import settings

SSHD = "/usr/sbin/sshd"
PROGRAMS = Path(__file__).resolve().parent / "programs"
HOST_KEYS: tuple[tuple[str, list[str]], ...] = (("ed25519", []), ("ecdsa", []), ("rsa", ["-b", "3072"]))
RUN_ROOT = Path("/run/hostsite-ssh")


class SshUnavailable(RuntimeError):
    """sshd cannot run here; the message says why in one line, naming the path or program."""


@dataclasses.dataclass(frozen=True)
class SshPaths:
    ssh_dir: Path  # VAR_DIR/ssh: host keys, sshd_config, the pid file
    runtime_dir: Path  # the programs and the gateway's socket
    config: Path
    socket: Path
    keys_program: Path
    shell_program: Path
    pid_file: Path


def paths(var_dir: Path | None = None) -> SshPaths:
    var_dir = Path(var_dir or settings.VAR_DIR).resolve()
    ssh_dir = var_dir / "ssh"
    if os.geteuid() == 0:
        runtime = RUN_ROOT / hashlib.sha256(str(var_dir).encode()).hexdigest()[:12]
    else:
        runtime = ssh_dir / "run"
    return SshPaths(
        ssh_dir=ssh_dir,
        runtime_dir=runtime,
        config=ssh_dir / "sshd_config",
        socket=runtime / "gateway.sock",
        keys_program=runtime / "hostsite-keys",
        shell_program=runtime / "hostsite-shell",
        pid_file=ssh_dir / "sshd.pid",
    )


def sshd_argv(p: SshPaths) -> list[str]:
    """sshd in the foreground (-D), logging to stderr (-e), for a supervisor."""
    return [SSHD, "-D", "-e", "-f", str(p.config)]


def unsafe_component(path: Path) -> Path | None:
    """The first of `path` and its parents sshd would refuse (safe_path: root-owned, no g/o write)."""
    for part in (path, *path.parents):
        st = part.stat()
        if st.st_uid != 0 or st.st_mode & 0o022:
            return part
    return None


def prepare(var_dir: Path | None = None) -> SshPaths:
    """Make everything sshd needs (idempotent); SshUnavailable with the reason if it cannot run."""
    if not os.access(SSHD, os.X_OK):
        raise SshUnavailable(f"{SSHD} is not installed (Debian: apt-get install openssh-server)")
    p = paths(var_dir)
    p.ssh_dir.mkdir(parents=True, exist_ok=True)
    _host_keys(p)
    user = settings.SSH_USER
    if os.geteuid() == 0:
        _ensure_account(user)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # Debian's privilege separation dir
        RUN_ROOT.mkdir(mode=0o755, exist_ok=True)
        os.chmod(RUN_ROOT, 0o755)  # noqa: S103 - the SSH account runs the programs
    elif user != pwd.getpwuid(os.geteuid()).pw_name:
        raise SshUnavailable(f"sshd not running as root can only log in its own account, not SSH_USER={user}")
    p.runtime_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(p.runtime_dir, 0o755)  # noqa: S103 - as above
    install_programs(p)
    bad = unsafe_component(p.keys_program)
    if bad is not None:
        raise SshUnavailable(
            f"sshd runs an AuthorizedKeysCommand only from root-owned paths nobody else can write; "
            f"{bad} is not (run as root, or set SSH_PORT=0)"
        )
    p.config.write_text(sshd_config(p, user=user))
    check = subprocess.run([SSHD, "-t", "-f", str(p.config)], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise SshUnavailable(f"sshd -t refused {p.config}: {check.stderr.strip() or check.stdout.strip()}")
    return p


def _host_keys(p: SshPaths) -> None:
    # Made once and kept: clients pin them in known_hosts.
    for name, extra in HOST_KEYS:
        key = p.ssh_dir / f"ssh_host_{name}_key"
        if not key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-N", "", "-t", name, *extra, "-C", "hostsite", "-f", str(key)],
                check=True,
                stdin=subprocess.DEVNULL,
            )


def _ensure_account(user: str) -> None:
    try:
        pwd.getpwnam(user)
    except KeyError:
        # A real POSIX shell: sshd runs the forced command through it. An existing home: else
        # sshd prints "Could not chdir to home directory" into every git client's terminal.
        subprocess.run(
            [
                "useradd",
                "--system",
                "--create-home",
                "--home-dir",
                f"/home/{user}",
                "--shell",
                "/bin/sh",
                user,
            ],
            check=True,
        )
    # useradd leaves the password field "!", which sshd without PAM reads as a locked account
    # and refuses even key logins; "*" is "no password" without the lock.
    status = subprocess.run(
        ["passwd", "-S", user], capture_output=True, text=True, check=False
    ).stdout.split()
    if len(status) > 1 and status[1] == "L":
        subprocess.run(["usermod", "-p", "*", user], check=True)


def _python_for() -> str:
    # The SSH account must be able to run it; /root (mode 700) would hide a venv under it.
    return "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def install_programs(p: SshPaths, language: str | None = None) -> str:
    """The two programs sshd runs, compiled from C when a compiler is here (each starts in ~2 ms
    against 10-17 ms for a Python interpreter, and sshd starts three per push), else the Python
    twins. HOSTSITE_SSH_PROGRAMS=python|c forces one. Returns the language installed."""
    language = language or os.environ.get("HOSTSITE_SSH_PROGRAMS") or ""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if language != "python" and compiler is not None:
        _compile(PROGRAMS / "hostsite_keys.c", p.keys_program, compiler)
        _compile(PROGRAMS / "hostsite_shell.c", p.shell_program, compiler)
        return "c"
    if language == "c":
        raise SshUnavailable("HOSTSITE_SSH_PROGRAMS=c, but no C compiler (cc) is installed")
    _install_program(PROGRAMS / "keys_command.py", p.keys_program, p.socket)
    _install_program(PROGRAMS / "shell.py", p.shell_program, p.socket)
    return "python"


def _compile(source: Path, target: Path, compiler: str) -> None:
    # Rebuilt only when the source changes; the stamp beside the program names the source.
    stamp = target.with_name(target.name + ".source")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if target.exists() and stamp.exists() and stamp.read_text() == digest:
        return
    tmp = target.with_name(target.name + ".tmp")
    build = subprocess.run(
        [compiler, "-O2", "-Wall", "-o", str(tmp), str(source)], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        raise SshUnavailable(f"could not compile {source.name}: {build.stderr.strip()[-300:]}")
    os.chmod(tmp, 0o755)  # noqa: S103 - run by the SSH account
    os.replace(tmp, target)
    stamp.write_text(digest)


def _install_program(source: Path, target: Path, socket: Path) -> None:
    text = source.read_text()
    text = text.replace('\nSOCKET_PATH = ""', f"\nSOCKET_PATH = {str(socket)!r}", 1)
    # -I: no environment or user site; -S: no site import (~10 ms instead of ~20).
    text = f"#!{_python_for()} -IS\n{text}"
    target.with_name(target.name + ".source").unlink(missing_ok=True)
    if target.exists() and target.read_bytes() == text.encode():
        return
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o755)  # noqa: S103 - run by the SSH account
    os.replace(tmp, target)


def _session_rules(p: SshPaths, *, user: str) -> list[str]:
    """What the SSH account may do: keys from the gateway, the forced command, nothing else.
    Every keyword here is one sshd accepts inside a Match block (match_block)."""
    return [
        "AuthorizedKeysFile none",
        f"AuthorizedKeysCommand {p.keys_program} %u %f %t %k",
        f"AuthorizedKeysCommandUser {user}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        f"PermitRootLogin {'forced-commands-only' if user == 'root' else 'no'}",
        "AcceptEnv GIT_PROTOCOL",
        "AllowAgentForwarding no",
        "AllowTcpForwarding no",
        "AllowStreamLocalForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "DisableForwarding yes",
        "PermitTTY no",
        # A client that vanished (a laptop closed mid-clone) frees its session in two minutes.
        "ClientAliveInterval 30",
        "ClientAliveCountMax 4",
    ]


def sshd_config(p: SshPaths, *, user: str) -> str:
    lines = [
        "# Written by hostsite (sshgit/sshd.py) at every start; edits are lost.",
        f"Port {settings.SSH_PORT}",
        f"ListenAddress {settings.SSH_LISTEN}",
        *(f"HostKey {p.ssh_dir / f'ssh_host_{name}_key'}" for name, _ in HOST_KEYS),
        f"PidFile {p.pid_file}",
        f"AllowUsers {user}",
        *_session_rules(p, user=user),
        "PermitUserEnvironment no",
        "UsePAM no",
        "PrintMotd no",
        "PrintLastLog no",
        "LogLevel VERBOSE",
        # One that connects and never authenticates is dropped in thirty seconds.
        "LoginGraceTime 30",
        # Clients that connect at once (a CI fan-out, the benchmark) are not dropped early.
        "MaxStartups 100:30:200",
    ]
    return "\n".join(lines) + "\n"


def match_block(p: SshPaths, *, user: str) -> str:
    """The block for the system's own sshd on port 22 (SSH_SYSTEM_SSHD=1): it serves people as
    before and the SSH account as hostsite does. Appended at the end of /etc/ssh/sshd_config
    (a Match block runs to the end of the file or the next Match)."""
    rules = "".join(f"    {line}\n" for line in _session_rules(p, user=user))
    return f"# hostsite: git over SSH for the {user} account (manage.py ssh_prepare --match-block)\nMatch User {user}\n{rules}"


def gateway_argv(python: str, base_dir: Path, *extra: str) -> list[str]:
    return [python, str(base_dir / "manage.py"), "ssh_gateway", *extra]


def ready_banner(*, host: str) -> str:
    port = settings.SSH_PUBLIC_PORT
    return f"ssh://{settings.SSH_USER}@{settings.SSH_HOST or host}:{port}/..."
