"""Start the platform's real processes (gunicorn, Celery worker) for end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL for the database pytest-django created, for child processes."""
    engine = settings_dict["ENGINE"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    if engine.endswith("postgresql"):
        user = settings_dict.get("USER") or ""
        password = settings_dict.get("PASSWORD") or ""
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or 5432
        return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"
    raise RuntimeError(f"unsupported engine {engine}")


def processes_with_marker(marker: str) -> list[int]:
    """PIDs whose environment contains the marker (children inherit it, orphans included)."""
    needle = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except (OSError, PermissionError):
            continue
    return found


def wait_for_http(url: str, *, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except (urllib.error.URLError, OSError) as exc:
            last = exc
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout}s: {last}")


class ManagedProcess:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            argv, env=env, cwd=BASE_DIR, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:]

    def logged(self, text: str) -> bool:
        # The whole log: a worker draining a backlog pushes its "ready." out of log()'s tail.
        return text in self.log_path.read_text(errors="replace")

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._log.close()


def start_web(env: dict[str, str], port: int, log_dir: Path) -> ManagedProcess:
    env = {**env, "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "2", "ACCESS_LOG": "0"}
    web = ManagedProcess(
        "web",
        [
            PY,
            "-m",
            "gunicorn",
            "-c",
            str(BASE_DIR / "hostsite/gunicorn_conf.py"),
            "hostsite.wsgi:application",
        ],
        env,
        log_dir,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", proc=web.proc)
    except Exception:
        web.stop()
        raise RuntimeError(f"web server failed to start:\n{web.log()}") from None
    return web


def start_worker(env: dict[str, str], log_dir: Path, *, queue: str) -> ManagedProcess:
    worker = ManagedProcess(
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
            "1",
            "--queues",
            queue,
            "--hostname",
            f"test-{os.getpid()}@%h",
            "--without-mingle",
            "--without-gossip",
        ],
        env,
        log_dir,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if worker.logged("ready."):
            return worker
        if worker.proc.poll() is not None:
            break
        time.sleep(0.2)
    log = worker.log()
    worker.stop()
    raise RuntimeError(f"Celery worker failed to start:\n{log}")
