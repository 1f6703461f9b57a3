"""One job at a time per repository, for the platform's own work on it.

- `repository_lock(repo_id, purpose=...)` serializes git writes: merges, merged-ref cleanup,
  moderation, maintenance's repack. It waits (up to `timeout`) and raises RepositoryBusy.
  Pushes do not take it: git's ref transactions already serialize them, and every platform
  write is a compare-and-swap, so a push racing a merge loses nothing.
- `claim(kind, repo_id)` is for long jobs (a bundle build, a maintenance run): it does not
  wait, it answers None when another holder has it. `is_claimed` / `holders` tell a page or
  a reaper who holds what now.

Both are the same lock, keyed by (kind, repository); `repository_lock` is kind "repository".
The implementation follows the database: PostgreSQL's advisory locks (repos.locking.advisory)
exclude every host sharing the database; on SQLite, which lives on one host, a flock(2) under
VAR_DIR (repos.locking.flock). Either way the lock belongs to the holder's process, so one
that dies, even by SIGKILL, releases it: no lease to expire, no pid to check.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from django.conf import settings

from repos.errors import Conflict
from repos.locking import advisory, flock
from repos.locking.flock import database_scope as database_scope


class RepositoryBusy(Conflict):
    pass


class _Lock(Protocol):
    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...
    def close(self) -> None: ...
    def give_up(self) -> None: ...


# A claim that finds the lock taken retries this long before answering None: a flock probe by
# is_claimed/holders holds the file for microseconds, and must not turn a free lock busy.
CLAIM_PATIENCE = 0.05

_KIND = re.compile(r"[a-z][a-z0-9_]{0,39}")


def lock_key(kind: str, repo_id: int) -> tuple[int, int]:
    """(int4, int4) for pg_try_advisory_lock: a stable key per kind (its CRC-32), and the
    repository id (ids past 2**31 wrap, sharing a lock with one four billion away)."""
    _check_kind(kind)
    return _int4(zlib.crc32(kind.encode())), _int4(int(repo_id))


def _check_kind(kind: str) -> None:
    # Part of a file name on SQLite.
    if not _KIND.fullmatch(kind):
        raise ValueError(f"lock kind must be a short lowercase word, got {kind!r}")


def _int4(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def uses_advisory_locks() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def _open(kind: str, repo_id: int, note: str) -> _Lock:
    if uses_advisory_locks():
        return advisory.AdvisoryLock(lock_key(kind, repo_id), note)
    _check_kind(kind)
    return flock.FileLock(kind, repo_id, note)


class Claim:
    """A held lock. Released by `release()` or on leaving its `with` block; once only."""

    def __init__(self, kind: str, repo_id: int, lock: _Lock) -> None:
        self.kind = kind
        self.repository_id = repo_id
        self._lock: _Lock | None = lock

    def release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _acquire(kind: str, repo_id: int, note: str, timeout: float) -> Claim | None:
    lock = _open(kind, repo_id, note)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.01
        while not lock.try_acquire():
            left = deadline - time.monotonic()
            if left <= 0:
                lock.give_up()
                return None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.2)
    except BaseException:
        lock.close()
        raise
    return Claim(kind, repo_id, lock)


def claim(kind: str, repo_id: int, *, note: str = "") -> Claim | None:
    """Hold (kind, repository) if no one does, else None. `note` names the holder for
    operators and `holders` (default: the kind and this pid)."""
    return _acquire(kind, repo_id, note or f"{kind} (pid {os.getpid()})", CLAIM_PATIENCE)


def holders(kind: str, repo_ids: Iterable[int]) -> dict[int, str]:
    """repository id -> the note of its live holder, for those of repo_ids held now."""
    ids = {int(repo_id) for repo_id in repo_ids}
    if uses_advisory_locks():
        return advisory.holders({repo_id: lock_key(kind, repo_id) for repo_id in ids})
    _check_kind(kind)
    return flock.holders(kind, ids)


def is_claimed(kind: str, repo_id: int) -> bool:
    return int(repo_id) in holders(kind, [repo_id])


@contextlib.contextmanager
def repository_lock(repo_id: int, *, purpose: str, timeout: float = 60.0) -> Iterator[None]:
    """Hold the repository's lock for `purpose` (shown to whoever waits), waiting up to
    `timeout` seconds; RepositoryBusy (a Conflict) names the holder if it stays taken."""
    held = _acquire("repository", repo_id, f"{purpose} (pid {os.getpid()})", timeout)
    if held is None:
        holder = holders("repository", [repo_id]).get(int(repo_id)) or "another process"
        raise RepositoryBusy(f"the repository is busy ({holder}); try again shortly")
    with held:
        yield


def lock_path(repo_id: int, kind: str = "repository") -> Path:
    """The file behind a lock on SQLite (for operators and tests)."""
    return flock.lock_path(kind, repo_id)
