"""One writer at a time per repository, for the platform's own work on it: merges, merged-ref
cleanup, maintenance. Pushes do not take it: git's ref transactions already serialize them,
and every platform write is a compare-and-swap, so a push racing a merge loses nothing.

An exclusive flock(2) on `<VAR_DIR>/locks/repo-<id>.lock`: held by an open file, so the kernel
releases it when its holder dies (even by SIGKILL), and it excludes threads of one process
too (each acquisition opens the file anew). It holds among processes sharing VAR_DIR on one
host, as `make run` and docker-compose deploy; several hosts would need a lock service.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from repos.errors import Conflict


class RepositoryBusy(Conflict):
    pass


def lock_path(repo_id: int) -> Path:
    return Path(settings.VAR_DIR) / "locks" / f"repo-{int(repo_id)}.lock"


@contextlib.contextmanager
def repository_lock(repo_id: int, *, purpose: str, timeout: float = 60.0) -> Iterator[None]:
    """Hold the repository's lock for `purpose` (recorded in the file, for an operator), waiting
    up to `timeout` seconds; RepositoryBusy (a Conflict) names the holder if it stays taken."""
    path = lock_path(repo_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
                    raise RepositoryBusy(f"the repository is busy ({holder}); try again shortly") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{purpose} (pid {os.getpid()})\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
