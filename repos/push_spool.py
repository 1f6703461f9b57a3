"""Spooled pushes: a push that moved refs is recorded even if the database is unavailable when
git exits, or the web worker dies before it records.

git's post-receive hook (repos/hooks/post_receive.py) writes each push's ref updates to
`<PUSH_SPOOL_DIR>/<repository id>-<spool id>.json` (fsync'd, renamed into place) before git
sends the client its last byte. After git exits, the web process records the file
(`LiveRecording`) and removes it once the transaction committed. A file left behind (the
database was down, the worker was killed) is recorded by `replay`: Celery beat runs it every
minute and `make run` at start-up. The spool id is unique on Push, so a file recorded twice
(by the web process and a replay at once) makes one push.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError

from repos import pushes
from repos.models import Push, Repository, User

log = logging.getLogger(__name__)

SUFFIX = ".json"
FAILED_DIR = "failed"  # files that cannot be read, kept for an operator
_NAME = re.compile(r"^\.?(\d+)-([0-9a-f]{32})\.(json|tmp)$")
# What the client sees (as `remote: hostsite: ...`) when the web process could not record it.
DELAYED_MESSAGE = (
    "hostsite: your push is complete, but recording it in the pushlog is delayed (the "
    "database did not answer); it will be recorded automatically within minutes, and "
    "nothing needs pushing again."
)


class BadSpoolFile(ValueError):
    pass


@dataclass(frozen=True)
class SpooledPush:
    id: str
    repository_id: int
    pusher: str
    pusher_id: int | None
    protocol: str
    updates: list[pushes.Update]
    push_options: list[str]
    pushed_at: datetime
    writer_pid: int | None
    writer_host: str


def spool_dir() -> Path:
    return Path(settings.PUSH_SPOOL_DIR)


def new_spool_id() -> str:
    return uuid.uuid4().hex


def spool_path(repository_id: int, spool_id: str) -> Path:
    return spool_dir() / f"{int(repository_id)}-{spool_id}{SUFFIX}"


def pending_repository_ids() -> set[int]:
    """Repositories with a spooled push not yet recorded, or being written right now."""
    try:
        names = os.listdir(spool_dir())
    except FileNotFoundError:
        return set()
    return {int(match[1]) for name in names if (match := _NAME.match(name))}


def read(path: Path) -> SpooledPush:
    """The push in a spool file; BadSpoolFile if it is not one post-receive wrote."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        updates = pushes.parse_updates("".join(f"{old} {new} {ref}\n" for old, new, ref in data["updates"]))
        options = pushes.parse_push_options("".join(f"option {option}\n" for option in data["push_options"]))
        spooled = SpooledPush(
            id=str(data["id"]),
            repository_id=int(data["repository_id"]),
            pusher=str(data["pusher"])[:39],
            pusher_id=int(data["pusher_id"]) if data.get("pusher_id") else None,
            protocol=str(data.get("protocol") or "http")[:20],
            updates=updates,
            push_options=options,
            pushed_at=datetime.fromtimestamp(float(data["pushed_at"]), tz=UTC),
            writer_pid=int(data["writer_pid"]) if data.get("writer_pid") else None,
            writer_host=str(data.get("writer_host") or ""),
        )
    except FileNotFoundError:
        raise
    except (OSError, ValueError, TypeError, KeyError, OverflowError) as exc:
        raise BadSpoolFile(f"{path.name}: {exc}") from None
    if not re.fullmatch(r"[0-9a-f]{32}", spooled.id) or not updates:
        raise BadSpoolFile(f"{path.name}: no spool id or no ref updates")
    return spooled


def record(spooled: SpooledPush) -> Push | None:
    """Record a spooled push (or find it recorded). None if its repository is gone for good."""
    repo = Repository.objects.filter(pk=spooled.repository_id).select_related("owner").first()
    if repo is None:
        return None
    pusher = User.objects.filter(pk=spooled.pusher_id).first() if spooled.pusher_id else None
    return pushes.push_record(
        repo=repo,
        pusher=pusher,
        pusher_name=spooled.pusher,
        updates=spooled.updates,
        protocol=spooled.protocol,
        push_options=spooled.push_options,
        spool_id=spooled.id,
        created_at=spooled.pushed_at,
    )


def record_file(path: Path, spooled: SpooledPush) -> Push | None:
    """Record, then remove the file: only after the push committed, so a crash in between
    leaves a file whose next recording finds the push and does nothing else."""
    push = record(spooled)
    if push is None:
        log.warning(
            "the repository %s of spooled push %s is gone; dropping %s",
            spooled.repository_id,
            spooled.id,
            path.name,
        )
    path.unlink(missing_ok=True)
    return push


class LiveRecording:
    """The web process's one attempt to record a push, after git exits (repos.pipeline.push).

    `attempt()` runs at most once, whoever asks first: the response before its final flush (so
    the client can be told the record is delayed), or the response's close. Never raises."""

    def __init__(self, *, repository_id: int, spool_id: str, updates_file: str, record_fallback):
        self.path = spool_path(repository_id, spool_id)
        self.spool_id = spool_id
        self._updates_file = updates_file
        self._record_fallback = record_fallback  # records the updates file post-receive fell back to
        self._lock = threading.Lock()
        self._done = False
        self.push: Push | None = None
        self.delayed = False

    def attempt(self) -> bool:
        """True when the push is recorded (or there was nothing to record)."""
        with self._lock:
            if not self._done:
                self._done = True
                self._attempt()
            return not self.delayed

    def _attempt(self) -> None:
        try:
            try:
                spooled = read(self.path)
            except FileNotFoundError:
                spooled = None  # git refused every command, or post-receive could not spool
            except BadSpoolFile:
                log.exception("unreadable spool file %s", self.path)
                quarantine(self.path)
                spooled = None
            if spooled is not None:
                self.push = record_file(self.path, spooled)
            else:
                self.push = self._record_fallback(_read_text(self._updates_file))
        except Exception:
            self.delayed = True
            # The spool file stays for the replay; say so unless the push committed after all
            # (a failure after the commit, such as the broker refusing a follow-up task).
            with contextlib.suppress(Exception):
                self.delayed = not Push.objects.filter(spool_id=self.spool_id).exists()
            log.exception(
                "could not record a push from %s now; %s",
                self.path,
                "the replay will" if self.delayed else "it is recorded",
            )
            if self.delayed:
                release(self.path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self._updates_file)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def release(path: Path) -> None:
    """Tell the replay not to wait for this file's writer, which is done trying: its
    modification time goes back to the epoch, older than any grace period."""
    with contextlib.suppress(OSError):
        os.utime(path, (0, 0))


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def quarantine(path: Path) -> None:
    target = path.parent / FAILED_DIR
    target.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.replace(path, target / path.name)


@dataclass(frozen=True)
class ReplayResult:
    recorded: int = 0
    waiting: int = 0  # young files whose writer may still record them, or left for the next run
    failed: int = 0


def replay(*, grace: float | None = None) -> ReplayResult:
    """Record the spooled pushes no web process recorded, oldest first. A file younger than
    `grace` seconds (PUSH_SPOOL_GRACE_SECONDS) is left to its writer unless that process is
    gone or released the file (its attempt failed). Stops at the first database error: the
    rest would meet it too."""
    grace = settings.PUSH_SPOOL_GRACE_SECONDS if grace is None else grace
    recorded = waiting = failed = 0
    _remove_stale_temporaries(max(grace, settings.PUSH_SPOOL_GRACE_SECONDS))
    files = _spool_files()
    for index, path in enumerate(files):
        try:
            spooled = read(path)
        except FileNotFoundError:
            continue  # its writer recorded it meanwhile
        except BadSpoolFile as exc:
            log.error("cannot replay a spooled push (%s); moved to %s/", exc, FAILED_DIR)
            quarantine(path)
            failed += 1
            continue
        if _age(path) < grace and _writer_alive(spooled):
            waiting += 1
            continue
        try:
            record_file(path, spooled)
            recorded += 1
        except DatabaseError:
            log.warning(
                "the database is unavailable; %d spooled pushes wait for the next replay",
                len(files) - index,
                exc_info=True,
            )
            return ReplayResult(recorded, waiting + len(files) - index, failed)
        except Exception:
            log.exception("could not replay the spooled push %s; the next replay retries", path.name)
            failed += 1
    return ReplayResult(recorded, waiting, failed)


def _remove_stale_temporaries(age: float) -> None:
    """A temporary file post-receive never renamed (it was killed while writing) would keep
    reconciliation off its repository for good. Its push is not lost with it: the refs it moved
    are on disk, and reconciliation records them as recovered."""
    directory = spool_dir()
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(directory):
            path = directory / name
            if name.startswith(".") and name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    if time.time() - path.stat().st_mtime > age:
                        path.unlink()
                        log.warning("removed %s, a spool file post-receive never finished", name)


def _spool_files() -> list[Path]:
    directory = spool_dir()
    try:
        entries = [
            directory / name
            for name in os.listdir(directory)
            if name.endswith(SUFFIX) and not name.startswith(".")
        ]
    except FileNotFoundError:
        return []

    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    return sorted(entries, key=lambda p: (mtime(p), p.name))


def _writer_alive(spooled: SpooledPush) -> bool:
    """Whether the web process that wrote the file may still be recording it. Unknown (another
    host, no pid) counts as alive: the grace period decides then."""
    if not spooled.writer_pid or spooled.writer_host != os.uname().nodename:
        return True
    try:
        os.kill(spooled.writer_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # A killed worker its master has not reaped yet is a zombie: gone all the same.
        state = Path(f"/proc/{spooled.writer_pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"
