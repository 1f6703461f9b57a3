"""The servers a benchmark starts, through hostsite.processes: each in its own process group
with its log in the run's logs/ directory, all stopped however the run ends."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.harness.common import BASE_DIR, PY, SetupError
from hostsite import processes
from hostsite.processes import Child, StartupError, free_port

__all__ = ["Processes", "free_port", "start_web", "start_worker", "wait_for_http", "wait_for_port"]

GUNICORN = processes.web_argv(PY, BASE_DIR)


class Processes:
    """Long-running children, each in its own process group, all stopped in stop_all()."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.children: list[Child] = []

    def start(
        self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path | None = None, pipes: bool = False
    ) -> Child:
        # Appended: a server restarted under the same name keeps its earlier log.
        log_path = self.log_dir / f"{name}.log"
        child = Child(
            name,
            argv,
            env=env,
            cwd=cwd,
            log_path=log_path,
            append=True,
            stdin=subprocess.DEVNULL,
            pipes=pipes,
        )
        self.children.append(child)
        return child

    def log_tail(self, name: str, limit: int = 4000) -> str:
        child = next((c for c in reversed(self.children) if c.name == name), None)
        return child.log(limit) if child else ""

    def stop_all(self) -> None:
        # The whole group of each: nginx, fcgiwrap and git daemon fork workers of their own.
        processes.stop_all(reversed(self.children), 15, group=True)
        self.children.clear()


def wait_for_port(port: int, child: Child, what: str, timeout: float = 30.0) -> None:
    try:
        processes.wait_for_port(port, watch=[child], timeout=timeout)
    except StartupError as exc:
        raise SetupError(f"{what}: {exc}") from None


def wait_for_http(url: str, child: Child, what: str, timeout: float = 60.0) -> None:
    try:
        processes.wait_for_http(url, watch=[child], timeout=timeout)
    except StartupError as exc:
        raise SetupError(f"{what}: {exc}") from None


def start_web(procs: Processes, env: dict[str, str], port: int, *, name: str = "hostsite") -> Child:
    """gunicorn as `make run` starts it, listening on `port`; SetupError with its log tail."""
    child = procs.start(name, GUNICORN, env={**env, "PORT": str(port)}, cwd=BASE_DIR)
    wait_for_http(f"http://127.0.0.1:{port}/", child, f"hostsite ({name})")
    return child


def start_worker(
    procs: Processes, env: dict[str, str], *, name: str = "worker", timeout: float = 60.0
) -> Child:
    """One Celery worker (concurrency 1, no mingle or gossip), once it has logged "ready."."""
    argv = processes.celery_argv(PY, "worker", "--concurrency", "1", "--without-mingle", "--without-gossip")
    child = procs.start(name, argv, env=env, cwd=BASE_DIR)
    try:
        processes.wait_for_log(child, "ready.", timeout=timeout)
    except StartupError as exc:
        raise SetupError(f"the Celery worker did not start: {exc}") from None
    return child
