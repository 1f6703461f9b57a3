"""Start the platform's real processes (gunicorn, Celery worker) for end-to-end tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from hostsite import processes
from hostsite.processes import StartupError, free_port

# free_port is re-exported: the live tests take their ports from here.
__all__ = [
    "BASE_DIR",
    "PY",
    "ManagedProcess",
    "database_url",
    "empty_queues",
    "free_port",
    "processes_with_marker",
    "start_web",
    "start_worker",
    "wait_for_http",
]

BASE_DIR = Path(__file__).resolve().parent.parent
PY = sys.executable


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


def empty_queues(*names: str, delete: bool = False) -> None:
    """Purge the named queues of the test session's broker (and delete them: a queue named for
    one run or one node is not used again). Redis outlives the run, and a worker started later
    on a queue must not meet an earlier test's messages. A queue never declared, or a broker
    that is down, is nothing to clean."""
    from hostsite.celery import app

    with contextlib.suppress(Exception), app.connection_for_write() as conn:
        for name in names:
            with contextlib.suppress(Exception):
                conn.default_channel.queue_purge(name)
                if delete:
                    conn.default_channel.queue_delete(name)


def queue_length(name: str) -> int:
    """How many messages wait in the named queue of the session's broker (0 for a queue never
    declared)."""
    from hostsite.celery import app

    with app.connection_for_write() as conn:
        try:
            return conn.default_channel.queue_declare(queue=name, passive=True).message_count
        except conn.channel_errors:
            return 0


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
    processes.wait_for_http(url, watch=[proc] if proc is not None else [], timeout=timeout)


class ManagedProcess(processes.Child):
    """A platform process started for a test, its output in `log_dir/<name>.log`."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path):
        # No PR_SET_PDEATHSIG: a fixture may start it from a thread that ends before the test.
        super().__init__(
            name, argv, env=env, cwd=BASE_DIR, log_path=log_dir / f"{name}.log", parent_death=False
        )


def start_web(env: dict[str, str], port: int, log_dir: Path) -> ManagedProcess:
    env = {**env, "HOST": "127.0.0.1", "PORT": str(port), "WEB_CONCURRENCY": "2", "ACCESS_LOG": "0"}
    web = ManagedProcess("web", processes.web_argv(PY, BASE_DIR), env, log_dir)
    try:
        processes.wait_for_http(f"http://127.0.0.1:{port}/", watch=[web])
    except StartupError:
        web.stop()
        raise RuntimeError(f"web server failed to start:\n{web.log()}") from None
    return web


def start_worker(
    env: dict[str, str], log_dir: Path, *, queue: str, hostname: str | None = None
) -> ManagedProcess:
    hostname = hostname or f"test-{os.getpid()}@%h"
    options = ["--concurrency", "1", "--queues", queue, "--hostname", hostname]
    argv = processes.celery_argv(PY, "worker", *options, "--without-mingle", "--without-gossip")
    worker = ManagedProcess("worker", argv, env, log_dir)
    try:
        processes.wait_for_log(worker, "ready.", timeout=60)
    except StartupError:
        log = worker.log()
        worker.stop()
        raise RuntimeError(f"Celery worker failed to start:\n{log}") from None
    return worker
