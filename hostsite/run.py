"""`make run`: migrate, seed the demo, then run the web server, one Celery worker and beat, and
restart any of them that dies (with backoff) while the others carry on.

Every child runs in its own process group, so one Ctrl-C reaches only this supervisor, which
then stops each group in order (a second, racing SIGINT would make Celery skip its warm
shutdown). Children also get PR_SET_PDEATHSIG, so even if this process is SIGKILLed none of
them outlives it. Nothing here imports Django: settings errors surface in the children with
the message that names the variable.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable
STOP_TIMEOUT = 25.0
# A child that dies is restarted after BACKOFF_FIRST seconds, doubling on each quick death up to
# BACKOFF_MAX; one that had run STABLE_AFTER seconds starts over at BACKOFF_FIRST.
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
STABLE_AFTER = 60.0


def _die_with_parent() -> None:
    # Linux: deliver SIGTERM to the child when the supervisor dies, however it dies.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


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
    return env


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([PY, str(BASE_DIR / "manage.py"), *args], env=env, cwd=BASE_DIR, check=True)


class Child:
    """One supervised program: its command, its current process, and its restart backoff."""

    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self.argv = argv
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.delay = 0.0  # the last restart delay; 0 until it first dies
        self.restart_at: float | None = None  # set while it is dead and waiting to restart


def _how_it_ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


class Supervisor:
    """Starts the children and restarts any that dies, the others carrying on: a killed Celery
    worker comes back (and gets its unacknowledged tasks again) while the web server serves."""

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.children: list[Child] = []
        self.stopping = False

    def start(self, name: str, argv: list[str]) -> None:
        child = Child(name, argv)
        self.children.append(child)
        self._spawn(child)

    def _spawn(self, child: Child) -> None:
        child.proc = subprocess.Popen(
            child.argv, env=self.env, cwd=BASE_DIR, start_new_session=True, preexec_fn=_die_with_parent
        )
        child.started = time.monotonic()
        child.restart_at = None

    def any_exited(self) -> bool:
        return any(child.proc.poll() is not None for child in self.children)

    def check(self) -> None:
        """Notice children that died and restart those whose backoff is over."""
        now = time.monotonic()
        for child in self.children:
            if child.restart_at is None:
                code = child.proc.poll()
                if code is None:
                    continue
                # What is left of its process group (Celery pool processes mid-task, gunicorn
                # workers holding the port) goes too: the new one gets those tasks again.
                self._signal_group(child.proc, signal.SIGKILL)
                uptime = now - child.started
                if uptime >= STABLE_AFTER or not child.delay:
                    child.delay = BACKOFF_FIRST
                else:
                    child.delay = min(child.delay * 2, BACKOFF_MAX)
                child.restart_at = now + child.delay
                print(
                    f"hostsite: {time.strftime('%H:%M:%S')} {child.name} (pid {child.proc.pid}) "
                    f"{_how_it_ended(code)} after {uptime:.0f}s; restarting it in {child.delay:g}s",
                    flush=True,
                )
            elif now >= child.restart_at:
                self._spawn(child)
                print(
                    f"hostsite: {time.strftime('%H:%M:%S')} {child.name} restarted (pid {child.proc.pid})",
                    flush=True,
                )

    def stop(self) -> None:
        self.stopping = True
        for child in self.children:
            # The leader only: gunicorn's master and Celery's main process stop their own
            # workers gracefully; signalling the whole group would kill those mid-task.
            if child.proc.poll() is None:
                child.proc.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT
        for child in self.children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.proc.wait(max(0.1, deadline - time.monotonic()))
        for child in self.children:
            # Whatever is left of each group (gunicorn workers, Celery pool processes) goes now.
            self._signal_group(child.proc, signal.SIGKILL)
            child.proc.wait()

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def wait(self) -> int:
        """Supervise until interrupted (KeyboardInterrupt, from SIGINT or SIGTERM)."""
        while True:
            self.check()
            time.sleep(0.5)


def _wait_until_serving(url: str, sup: Supervisor, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sup.any_exited():
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - our own loopback URL
                return resp.status < 500
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return False


def main() -> int:
    env = _environment()
    var_dir = Path(env["VAR_DIR"])
    print(f"hostsite: data in {var_dir}", flush=True)
    try:
        _manage(env, "migrate", "--noinput", "-v", "0")
        _manage(env, "collectstatic", "--noinput", "-v", "0")
        _manage(env, "seed_demo")
        _manage(env, "replay_pushes")  # pushes spooled while the last run was down or dying
    except subprocess.CalledProcessError as exc:
        return exc.returncode or 1
    except KeyboardInterrupt:
        return 130

    sup = Supervisor(env)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        sup.start(
            "web",
            [
                PY,
                "-m",
                "gunicorn",
                "-c",
                str(BASE_DIR / "hostsite/gunicorn_conf.py"),
                "hostsite.wsgi:application",
            ],
        )
        sup.start(
            "worker",
            [
                PY,
                "-m",
                "celery",
                "-A",
                "hostsite",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                env.get("CELERY_CONCURRENCY", "2"),
                "--hostname",
                f"worker-{os.getpid()}@%h",
            ],
        )
        sup.start(
            "beat",
            [
                PY,
                "-m",
                "celery",
                "-A",
                "hostsite",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(var_dir / "celerybeat-schedule"),
                "--pidfile",
                "",
            ],
        )
        host = env.get("HOST", "127.0.0.1")
        port = env.get("PORT", "8000")
        url = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
        if not _wait_until_serving(url, sup):
            print("hostsite: the web server did not start; see the log above", flush=True)
            return 1
        print(f"\nhostsite is running at {url}  (Ctrl-C stops it)\n", flush=True)
        return sup.wait()
    except KeyboardInterrupt:
        print("\nhostsite: stopping...", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sup.stop()
        print("hostsite: stopped", flush=True)


if __name__ == "__main__":
    sys.exit(main())
