"""repos.locking's file lock (SQLite deployments) vs filelock and portalocker.

All three take flock(2) on a file, so the kernel frees a lock when its holder dies. The run
checks that (a holder killed by SIGKILL, then a non-blocking try from another process), what
another process can learn about a holder while it holds (repos.locking.holders shows the
holder's note, e.g. "bundle build (pid 123)", on pages and in RepositoryBusy), and times
--cycles uncontended acquire + release cycles, each library side by side in one run.

    .venv/bin/python -m bench.locks [--cycles 5000]

The PostgreSQL lock (repos.locking.advisory) is not timed here: see that module's docstring.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

import filelock
import portalocker
from django.conf import settings


class Ours:
    name = "hostsite"

    def __init__(self, kind: str) -> None:
        from repos.locking import flock

        self.flock, self.kind = flock, kind

    def path(self) -> Path:
        return self.flock.lock_path(self.kind, 1)

    def acquire(self):
        lock = self.flock.FileLock(self.kind, 1, f"bench (pid {os.getpid()})")
        if not lock.try_acquire():
            lock.close()
            return None
        return lock

    def release(self, lock) -> None:
        lock.release()

    def holder(self) -> str | None:
        return self.flock.holders(self.kind, [1]).get(1)


class FileLockLib:
    name = "filelock"

    def __init__(self, kind: str) -> None:
        self._path = Path(settings.VAR_DIR) / f"{kind}-filelock.lock"

    def path(self) -> Path:
        return self._path

    def acquire(self):
        lock = filelock.FileLock(self._path, thread_local=False)
        try:
            lock.acquire(blocking=False)
        except filelock.Timeout:
            return None
        return lock

    def release(self, lock) -> None:
        lock.release()

    def holder(self) -> str | None:
        try:
            return self._path.read_text().strip() or None
        except FileNotFoundError:
            return None


class PortaLockerLib(FileLockLib):
    name = "portalocker"

    def __init__(self, kind: str) -> None:
        self._path = Path(settings.VAR_DIR) / f"{kind}-portalocker.lock"

    def acquire(self):
        lock = portalocker.Lock(
            self._path, mode="a", flags=portalocker.LOCK_EX | portalocker.LOCK_NB, timeout=0
        )
        try:
            lock.acquire()
        except portalocker.LockException:
            return None
        return lock


def survives_kill(impl) -> bool:
    """Whether the lock is free once its holder is killed with SIGKILL while holding it."""
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the holder
        held = impl.acquire()
        os.write(ready_w, b"1" if held else b"0")
        time.sleep(60)
        os._exit(0)
    os.close(ready_w)
    got = os.read(ready_r, 1)
    holder_seen = impl.holder()
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    lock = impl.acquire()
    if lock is not None:
        impl.release(lock)
    impl.seen = holder_seen
    return got == b"1" and lock is not None


def cycle_time(impl, cycles: int) -> float:
    start = time.perf_counter()
    for _ in range(cycles):
        impl.release(impl.acquire())
    return (time.perf_counter() - start) / cycles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="locks-bench-") as tmp:
        settings.configure(
            VAR_DIR=tmp, DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": f"{tmp}/db"}}
        )
        impls = [Ours("bench"), FileLockLib("bench"), PortaLockerLib("bench")]
        print(
            f"{'library':12} {'freed by SIGKILL':>17} {'holder seen by others':>22} {'acquire+release µs':>19}"
        )
        times = {}
        for impl in impls:
            freed = survives_kill(impl)
            times[impl.name] = cycle_time(impl, args.cycles)
            seen = impl.seen or "nothing"
            print(
                f"{impl.name:12} {'yes' if freed else 'NO':>17} {seen[:22]:>22} {times[impl.name] * 1e6:19.1f}"
            )
        for name in ("filelock", "portalocker"):
            print(f"{name} / hostsite time: {times[name] / times['hostsite']:.2f}")


if __name__ == "__main__":
    main()
