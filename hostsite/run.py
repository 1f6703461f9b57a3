"""`make run`: migrate, seed the demo, then run the web server, one Celery worker and beat (and,
unless SSH_PORT=0, the SSH gateway and sshd), and restart any of them that dies (with backoff)
while the others carry on. HOSTSITE_ROLE=replica runs a replica instead: the web server and a
worker on the node's own queue only (`_run_replica`). `python -m hostsite.run --ssh-only` runs just the SSH pair (the
container's `ssh` service).

Every child runs in its own process group (hostsite.processes), so one Ctrl-C reaches only
this supervisor, which then stops each group in order (a second, racing SIGINT would make
Celery skip its warm shutdown). Children also get PR_SET_PDEATHSIG, so even if this process is
SIGKILLed none of them outlives it. Nothing here imports Django: settings errors surface in the
children with the message that names the variable.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hostsite.processes import StartupError, Supervisor, celery_argv, wait_for_http, web_argv
from hostsite.queues import replica_queue

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable
STOP_TIMEOUT = 25.0


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    var_dir = Path(env.get("VAR_DIR") or BASE_DIR / "var").resolve()
    var_dir.mkdir(parents=True, exist_ok=True)
    env["VAR_DIR"] = str(var_dir)
    if not env.get("SECRET_KEY") and env.get("DEBUG", "").lower() not in {"1", "true", "yes", "on"}:
        # Embedded default: a random key made once and kept in var/, never in the code.
        key_file = var_dir / "secret_key"
        if not key_file.exists():
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(50))
        env["SECRET_KEY"] = key_file.read_text().strip()
    env.setdefault("PYTHONUNBUFFERED", "1")
    # Notification mail is printed by the worker unless a real server is named (EMAIL_URL).
    env.setdefault("EMAIL_URL", "console://")
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PY, str(BASE_DIR / "manage.py"), *args], env=env, cwd=BASE_DIR, check=True)


SSHD = "/usr/sbin/sshd"


def _install_openssh(env: dict[str, str]) -> None:
    """On a fresh Debian machine, as root: OpenSSH's server from Debian, as .ci/run installs it.
    Anywhere else make run goes on, and ssh_prepare says in one line why there is no SSH."""
    if env.get("SSH_PORT", "") == "0" or os.path.exists(SSHD) or os.geteuid() != 0:
        return
    if not shutil.which("apt-get"):
        return
    print("hostsite: installing openssh-server from Debian (git over SSH; SSH_PORT=0 skips it)", flush=True)
    apt = {**env, "DEBIAN_FRONTEND": "noninteractive"}

    def quiet(*argv: str) -> int:
        return subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=apt, check=False
        ).returncode

    install = (
        "apt-get",
        "install",
        "-y",
        "-qq",
        "--no-install-recommends",
        "openssh-server",
        "openssh-client",
    )
    # Debian's package would also start the system's own sshd on port 22; policy-rc.d (the
    # way Debian's container images do it) keeps it from starting now.
    policy = Path("/usr/sbin/policy-rc.d")
    created = not policy.exists()
    if created:
        policy.write_text("#!/bin/sh\n# hostsite make run: installing openssh-server\nexit 101\n")
        policy.chmod(0o755)
    try:
        if quiet(*install) != 0:
            quiet("apt-get", "update", "-qq")  # a fresh machine's package lists may be missing
            quiet(*install)
    finally:
        if created:
            policy.unlink(missing_ok=True)


def _prepare_ssh(env: dict[str, str], host: str) -> dict | None:
    """sshd's argv and URL from `manage.py ssh_prepare` (which has the settings), or None, having
    said in one line why make run goes on without SSH."""
    result = subprocess.run(
        [PY, str(BASE_DIR / "manage.py"), "ssh_prepare", "--host", host],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        prepared = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        prepared = {"unavailable": (result.stderr.strip().splitlines() or ["ssh_prepare failed"])[-1]}
    if "unavailable" in prepared:
        if prepared["unavailable"] != "SSH_PORT=0":
            print(f"hostsite: no git over SSH: {prepared['unavailable']}", flush=True)
        return None
    return prepared


def _start_ssh(sup: Supervisor, env: dict[str, str], prepared: dict) -> None:
    # The gateway first: sshd's programs answer "unavailable" until its socket exists.
    sup.start("ssh-gateway", [PY, str(BASE_DIR / "manage.py"), "ssh_gateway", "--drain-timeout", "20"])
    deadline = time.monotonic() + 30
    while not os.path.exists(prepared["gateway_socket"]) and time.monotonic() < deadline:
        if sup.any_exited():
            break
        time.sleep(0.1)
    if "sshd" in prepared:  # absent with SSH_SYSTEM_SSHD=1: the system's sshd serves port 22
        sup.start("sshd", prepared["sshd"])


def _announce(sup: Supervisor, env: dict[str, str], host: str, rest: str) -> bool:
    """Wait for the web server, then say where it runs; False when it did not start."""
    port = env.get("PORT", "8000")
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    try:
        wait_for_http(url, watch=sup.children)
    except StartupError as exc:
        print(f"hostsite: the web server did not start ({exc}); see the log above", flush=True)
        return False
    print(f"\nhostsite is running at {url}{rest}\n", flush=True)
    return True


def main(argv: list[str] | None = None) -> int:
    ssh_only = "--ssh-only" in (argv if argv is not None else sys.argv[1:])
    env = _environment()
    var_dir = Path(env["VAR_DIR"])
    host = env.get("HOST", "127.0.0.1")
    print(f"hostsite: data in {var_dir}", flush=True)
    if ssh_only:
        return _run_ssh_only(env, host)
    try:
        # Here: it checks the environment as it loads, and a bad value is one line and exit 2.
        from hostsite import node_settings
    except ValueError as exc:  # NodeSettingsError: the message names the variable
        print(f"hostsite: {exc}", flush=True)
        return 2
    if node_settings.HOSTSITE_ROLE == "replica":
        return _run_replica(env, host, node_settings.HOSTSITE_NODE, node_settings.PRIMARY_PUBLIC_URL)
    try:
        _manage(env, "prepare_run")  # migrate, static files, the demo, spooled pushes
        _install_openssh(env)
        ssh = _prepare_ssh(env, host)
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130

    with _supervised(env) as sup:
        try:
            sup.start("web", web_argv(PY, BASE_DIR))
            concurrency = env.get("CELERY_CONCURRENCY", "2")
            sup.start(
                "worker",
                celery_argv(
                    PY, "worker", "--concurrency", concurrency, "--hostname", f"worker-{os.getpid()}@%h"
                ),
            )
            schedule = str(var_dir / "celerybeat-schedule")
            sup.start("beat", celery_argv(PY, "beat", "--schedule", schedule, "--pidfile", ""))
            if ssh is not None:
                _start_ssh(sup, env, ssh)
            ssh_line = f"\n  ssh: {ssh['url']}" if ssh is not None else ""
            if not _announce(sup, env, host, "  (Ctrl-C stops it)" + ssh_line):
                return 1
            sup.run_forever()
            return 0
        except KeyboardInterrupt:
            print("\nhostsite: stopping...", flush=True)
            return 0


def _run_replica(env: dict[str, str], host: str, node: str, primary_public_url: str) -> int:
    """A replica: the web server and a worker consuming only this node's queue. No beat (it
    runs once per site, on the primary: a second would enqueue every periodic job twice), no
    demo seeding or push replay (writes are the primary's), and no sshd (pushes go to the
    primary). The primary migrates the shared database; a replica only checks it is."""
    queue = replica_queue(node)
    if not env.get("REPO_ROOT"):
        # Its own copies, never the primary's directory, even when both share VAR_DIR.
        env["REPO_ROOT"] = str(Path(env["VAR_DIR"]) / "replicas" / node)
    print(f"hostsite: replica {node}: copies in {env['REPO_ROOT']}, jobs from queue {queue}", flush=True)
    try:
        _manage(env, "migrate", "--check", "-v", "0")
    except subprocess.CalledProcessError:
        print("hostsite: the database is not migrated: start the primary first (it migrates it)", flush=True)
        return 1
    try:
        _manage(env, "collectstatic", "--noinput", "-v", "0")
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    if env.get("SSH_PORT", "") != "0":
        print(
            f"hostsite: no git over SSH on a replica: pushes go to the primary ({primary_public_url})",
            flush=True,
        )
    with _supervised(env) as sup:
        try:
            sup.start("web", web_argv(PY, BASE_DIR))
            concurrency = env.get("CELERY_CONCURRENCY", "2")
            worker = (
                "worker",
                "--concurrency",
                concurrency,
                "-Q",
                queue,
                "--hostname",
                f"{node}-{os.getpid()}@%h",
            )
            sup.start("worker", celery_argv(PY, *worker))
            if not _announce(sup, env, host, f" as replica {node}  (Ctrl-C stops it)"):
                return 1
            sup.run_forever()
            return 0
        except KeyboardInterrupt:
            print("\nhostsite: stopping...", flush=True)
            return 0


@contextlib.contextmanager
def _supervised(env: dict[str, str]) -> Iterator[Supervisor]:
    """A supervisor whose children all stop, in order, when the block ends; SIGINT and SIGTERM
    end it as KeyboardInterrupt."""
    sup = Supervisor(env=env, cwd=BASE_DIR, say=lambda text: print(f"hostsite: {text}", flush=True))

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        yield sup
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sup.stop(STOP_TIMEOUT)
        print("hostsite: stopped", flush=True)


def _run_ssh_only(env: dict[str, str], host: str) -> int:
    """The SSH gateway and sshd alone, supervised, on a database another process migrated."""
    ssh = _prepare_ssh(env, host)
    if ssh is None:
        return 1
    with _supervised(env) as sup:
        try:
            _start_ssh(sup, env, ssh)
            print(f"hostsite: ssh: {ssh['url']}", flush=True)
            sup.run_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
