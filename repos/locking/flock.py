"""The file-based lock, for SQLite deployments (one host: SQLite itself is one file on it).

An exclusive flock(2) on `<VAR_DIR>/locks/<database>/<kind>-<id>.lock`: held by an open file,
so the kernel releases it when its holder dies (even by SIGKILL), and it excludes threads of
one process too (each acquisition opens the file anew). It holds among processes sharing
VAR_DIR on one host, as `make run` and docker-compose deploy. The directory is per database,
as PostgreSQL's advisory locks are, so two test runs sharing VAR_DIR never meet.

Not filelock or portalocker (bench/locks.py): both take the same flock(2), and a holder killed
by SIGKILL frees all three; but neither lets another process see who holds a lock, which
`holders` and RepositoryBusy show, so the note and the shared-lock probe would stay here
around a library call that replaces two fcntl.flock lines. filelock also falls back silently to
a lock file that SIGKILL does not free on file systems without flock. Uncontended, a cycle
took 778 µs here (most of it naming the file: the database's scope), 1117 µs with filelock,
292 µs with portalocker: noise beside the jobs these locks serialize, which take seconds.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections


def database_scope() -> str:
    """A short stable name for the database in use: the same in every process that uses it."""
    config = connections[DEFAULT_DB_ALIAS].settings_dict
    name = str(config["NAME"])
    if config["ENGINE"].endswith("sqlite3"):
        name = str(Path(name).resolve())
    identity = "|".join(
        [config["ENGINE"], str(config.get("HOST") or ""), str(config.get("PORT") or ""), name]
    )
    return hashlib.sha256(identity.encode()).hexdigest()[:12]


def lock_path(kind: str, repo_id: int) -> Path:
    return Path(settings.VAR_DIR) / "locks" / database_scope() / f"{kind}-{int(repo_id)}.lock"


class FileLock:
    def __init__(self, kind: str, repo_id: int, note: str) -> None:
        path = lock_path(kind, repo_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.note = note
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{self.note}\n".encode(), 0)
        return True

    def release(self) -> None:
        try:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def give_up(self) -> None:
        self.close()


def holders(kind: str, repo_ids: Iterable[int]) -> dict[int, str]:
    """Probe each file with a shared lock: it fails only while an exclusive holder lives. The
    probe holds the file for microseconds; claims wait a little for it (repos.locking)."""
    found = {}
    for repo_id in repo_ids:
        try:
            fd = os.open(lock_path(kind, repo_id), os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            found[repo_id] = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    return found
