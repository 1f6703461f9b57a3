"""Long-lived `git cat-file` processes, one per repository per web worker process, for the
reads a page makes by the dozen: resolve a revision, read a tree, a commit or a small blob.

A git process costs 5 to 15 ms to start in a worker (fork of a large Python process, git's own
start-up); one `cat-file --batch-command` answers each question in well under a millisecond.
Objects never change; refs do, and git reads them again on every lookup (the files backend
re-checks packed-refs and loose refs, reftable reloads its stack), so a ref resolved here is
as fresh as one resolved by `rev-parse`.

Processes start through gitcore.git.popen_git (the one runner's argv and environment), are
kept in a small LRU per worker process, restarted when they die, closed when idle, killed by
a watchdog thread when one answer takes longer than GIT_TIMEOUT, and shared by threads: one
command and its answer at a time, under a lock.

Not dulwich's object store, which reads packs in Python without a git process: reading each
of this project's 6,835 objects one at a time took it 1.99 times as long as one `cat-file
--batch` (5.64 s vs 2.83 s, bench/git_parsers.py), and it would resolve revisions and refs (both
ref backends) by its own reading of git's rules instead of git's.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gitcore.git import GitError, GitTimeout, git_version, piped, popen_git

MAX_OPEN = 16  # repositories with a process, per worker process
IDLE_SECONDS = 120.0  # a process unused this long is closed


@dataclass(frozen=True)
class ObjectInfo:
    oid: str
    type: str  # "blob", "tree", "commit" or "tag"
    size: int


class TooLarge(Exception):
    """The object is larger than the caller's limit; it was not read."""

    def __init__(self, info: ObjectInfo):
        self.info = info
        super().__init__(f"{info.type} {info.oid} is {info.size} bytes")


class _Process:
    """One running `git cat-file` (both commands through `--batch-command` where git has it,
    else a `--batch` and a `--batch-check` process)."""

    def __init__(self, repo: str):
        self.repo = repo
        self.lock = threading.Lock()
        self.used = time.monotonic()
        self.busy_since: float | None = None
        self.timed_out = False
        self.procs: dict[str, subprocess.Popen] = {}

    def _proc(self, kind: str) -> subprocess.Popen:
        key = "both" if _has_batch_command() else kind
        proc = self.procs.get(key)
        if proc is None or proc.poll() is not None:
            args = {"both": "--batch-command", "contents": "--batch", "info": "--batch-check"}[key]
            proc = popen_git(["cat-file", args], repo=self.repo, stderr=subprocess.DEVNULL)
            self.procs[key] = proc
        return proc

    def _ask(self, kind: str, spec: str, limit: int | None) -> tuple[ObjectInfo | None, bytes | None]:
        proc = self._proc(kind)
        line = f"{kind} {spec}\n" if _has_batch_command() else f"{spec}\n"
        stdin, stdout = piped(proc.stdin), piped(proc.stdout)
        stdin.write(line.encode("utf-8", "surrogateescape"))
        stdin.flush()
        header = stdout.readline()
        if not header.endswith(b"\n"):
            raise EOFError("cat-file ended")
        fields = header.split()
        if len(fields) != 3:  # "<spec> missing", "<spec> ambiguous"
            return None, None
        info = ObjectInfo(fields[0].decode(), fields[1].decode(), int(fields[2]))
        if kind == "info":
            return info, None
        if limit is not None and info.size > limit:
            # The answer is already on its way: this process is out of step now. End it; the
            # next question starts another.
            self.close()
            raise TooLarge(info)
        data = stdout.read(info.size + 1)
        if len(data) != info.size + 1:
            raise EOFError("cat-file ended")
        return info, data[:-1]

    def ask(self, kind: str, spec: str, limit: int | None) -> tuple[ObjectInfo | None, bytes | None]:
        with self.lock:
            self.used = time.monotonic()
            self.busy_since, self.timed_out = self.used, False
            try:
                for attempt in (1, 2):
                    try:
                        return self._ask(kind, spec, limit)
                    except (OSError, EOFError, ValueError):
                        # Died (killed, out of memory, the repository went away) or was killed
                        # by the watchdog: once more with a new process, then give up.
                        self.close()
                        if self.timed_out:
                            raise GitTimeout(["cat-file", spec], -9, "timed out") from None
                        if attempt == 2:
                            raise GitError(["cat-file", spec], -1, "cat-file died") from None
                raise AssertionError("unreachable")
            finally:
                self.busy_since = None

    def expire(self, now: float) -> None:
        """Kill the process when one question has taken longer than GIT_TIMEOUT (the watchdog's
        thread; the asking thread holds the lock and sees its pipe end)."""
        since = self.busy_since
        if since is not None and now - since > settings.GIT_TIMEOUT:
            self.timed_out = True
            for proc in list(self.procs.values()):
                if proc.poll() is None:
                    proc.kill()

    def infos(self, specs: list[str]) -> list[ObjectInfo | None]:
        """Many `info` questions written ahead of their answers, in chunks small enough that
        neither pipe fills while the other waits."""
        found: list[ObjectInfo | None] = []
        with self.lock:
            self.used = time.monotonic()
            self.busy_since, self.timed_out = self.used, False
            for start in range(0, len(specs), 256):
                chunk = specs[start : start + 256]
                try:
                    found += self._infos(chunk)
                except (OSError, EOFError, ValueError):
                    self.close()
                    raise GitError(["cat-file", "--batch-check"], -1, "cat-file died") from None
                finally:
                    self.busy_since = None
        return found

    def _infos(self, specs: list[str]) -> list[ObjectInfo | None]:
        proc = self._proc("info")
        prefix = "info " if _has_batch_command() else ""
        stdin, stdout = piped(proc.stdin), piped(proc.stdout)
        stdin.write("".join(f"{prefix}{spec}\n" for spec in specs).encode("utf-8", "surrogateescape"))
        stdin.flush()
        found: list[ObjectInfo | None] = []
        for _ in specs:
            header = stdout.readline()
            if not header.endswith(b"\n"):
                raise EOFError("cat-file ended")
            fields = header.split()
            found.append(
                ObjectInfo(fields[0].decode(), fields[1].decode(), int(fields[2]))
                if len(fields) == 3
                else None
            )
        return found

    def close(self) -> None:
        procs, self.procs = list(self.procs.values()), {}
        for proc in procs:
            for pipe in (proc.stdin, proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def _has_batch_command() -> bool:
    return git_version() >= (2, 36, 0)


class _Pool:
    """The processes of this worker process, by repository path, least recently used first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.open: OrderedDict[str, _Process] = OrderedDict()
        self.watchdog: threading.Thread | None = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            now = time.monotonic()
            for proc in list(self.open.values()):
                proc.expire(now)
                # Idle ones end here too, so a worker that stops browsing holds no process.
                if proc.procs and now - proc.used > IDLE_SECONDS and proc.lock.acquire(blocking=False):
                    try:
                        proc.close()
                    finally:
                        proc.lock.release()

    def get(self, repo: Path | str) -> _Process:
        try:
            st = os.stat(repo)
        except OSError:
            raise GitError(["cat-file"], 128, f"no repository at {repo}") from None
        # The directory's identity too: a repository deleted and another created at the same
        # path (a reused id) must never be read through the old one's open packs.
        key = f"{repo}\0{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}"
        stale: list[_Process] = []
        with self.lock:
            if self.pid != os.getpid():  # a forked child: the parent's pipes are not ours
                self.open, self.pid, self.watchdog = OrderedDict(), os.getpid(), None
            if self.watchdog is None:
                self.watchdog = threading.Thread(target=self._watch, name="catfile-watchdog", daemon=True)
                self.watchdog.start()
            now = time.monotonic()
            for path, proc in list(self.open.items()):
                if now - proc.used > IDLE_SECONDS and not proc.lock.locked():
                    stale.append(self.open.pop(path))
            found = self.open.get(key)
            if found is None:
                found = self.open[key] = _Process(str(repo))
            self.open.move_to_end(key)
            while len(self.open) > MAX_OPEN:
                stale.append(self.open.popitem(last=False)[1])
        for proc in stale:
            with proc.lock:  # never under a question another thread is asking
                proc.close()
        return found

    def close_all(self) -> None:
        with self.lock:
            procs, self.open = list(self.open.values()), OrderedDict()
        for proc in procs:
            with proc.lock:
                proc.close()

    def count(self) -> int:
        return sum(len(p.procs) for p in self.open.values())


_pool = _Pool()
atexit.register(_pool.close_all)


def _clean(spec: str) -> str | None:
    # One question per line: a name with a newline (or NUL) cannot be asked, and names nothing.
    return None if not spec or "\n" in spec or "\0" in spec else spec


def info(repo: Path | str, spec: str) -> ObjectInfo | None:
    """Type and size of the object `spec` names (an id, `<rev>:<path>`, `<rev>^{tree}`, a ref),
    or None when it names nothing (missing, ambiguous, bad)."""
    cleaned = _clean(spec)
    return _pool.get(repo).ask("info", cleaned, None)[0] if cleaned else None


def infos(repo: Path | str, specs: list[str]) -> list[ObjectInfo | None]:
    """info() of many objects in one exchange (the sizes of a tree's blobs)."""
    if any(_clean(spec) is None for spec in specs):
        raise ValueError("an object name with a newline")
    return _pool.get(repo).infos(specs) if specs else []


def read(repo: Path | str, spec: str, *, limit: int | None = None) -> tuple[ObjectInfo, bytes] | None:
    """The object and its raw contents, or None when `spec` names nothing. TooLarge when it is
    larger than `limit` bytes (nothing is read)."""
    cleaned = _clean(spec)
    if not cleaned:
        return None
    found, data = _pool.get(repo).ask("contents", cleaned, limit)
    return (found, data) if found is not None and data is not None else None


def resolve(repo: Path | str, rev: str, peel: str = "commit") -> str | None:
    """`rev-parse --verify <rev>^{peel}` without a process: the id, or None."""
    if rev.startswith("-"):
        return None
    found = info(repo, f"{rev}^{{{peel}}}")
    return found.oid if found else None


def close_all() -> None:
    """End every process of this worker (tests; a repository moved on disk)."""
    _pool.close_all()


def open_processes() -> int:
    return _pool.count()
