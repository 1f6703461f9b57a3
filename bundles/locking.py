"""One bundle build at a time per repository: a claim taken with a conditional UPDATE
(repos.maintenance's pattern, Zulip's), released on every exit path.

A claim names its holder (`host:pid:start:nonce`, start being the process's start time, so a
recycled pid does not look alive) and is a lease: while a build runs, a heartbeat renews it
every fifth of BUNDLE_STALE_CLAIM. A worker killed with SIGKILL cannot release it, so a claim
whose process is gone from this host is taken over at once, and any claim not renewed for
BUNDLE_STALE_CLAIM (its worker died on another host, or hung) is taken over then.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q
from django.utils import timezone

from bundles.models import BuildState, BundleBuild, BundleLock

log = logging.getLogger(__name__)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or None
    if there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: count from its end.
    return stat.rpartition(")")[2].split()[19]


def holder_name() -> str:
    """A new claim name for this process."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or '0'}:{uuid.uuid4().hex[:12]}"


def holder_is_dead(holder: str) -> bool:
    """True if the holder's process is known to be gone: it ran on this host and no process
    with its pid (and start time) exists. A holder on another host is never known dead here;
    its lease decides."""
    parts = holder.split(":")
    if len(parts) < 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # alive, another user's
    if len(parts) >= 4 and parts[2] != "0":
        started = _start_time(pid)
        return started is not None and started != parts[2]
    return False


def claim(repo_id: int) -> str | None:
    """The claim's name if this process now holds the repository's lock, else None."""
    BundleLock.objects.bulk_create([BundleLock(repository_id=repo_id)], ignore_conflicts=True)
    me = holder_name()
    now = timezone.now()
    stale = now - settings.BUNDLE_STALE_CLAIM
    locks = BundleLock.objects.filter(pk=repo_id)
    if locks.filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale)).update(
        claimed_at=now, claimed_by=me
    ):
        return me
    holder = locks.values_list("claimed_by", flat=True).first()
    # Conditional on the same holder, so two workers cannot both take over a dead claim.
    if (
        holder
        and holder_is_dead(holder)
        and locks.filter(claimed_by=holder).update(claimed_at=now, claimed_by=me)
    ):
        return me
    return None


def release(repo_id: int, me: str) -> None:
    BundleLock.objects.filter(pk=repo_id, claimed_by=me).update(claimed_at=None, claimed_by="")


def is_claimed(repo_id: int) -> bool:
    return BundleLock.objects.filter(pk=repo_id, claimed_at__isnull=False).exists()


def holders(repo_ids) -> dict[int, str]:
    """repository id -> current claim name, for the claimed ones among repo_ids."""
    rows = BundleLock.objects.filter(pk__in=list(repo_ids), claimed_at__isnull=False)
    return dict(rows.values_list("repository_id", "claimed_by"))


def _beat(repo_id: int, me: str, stop: threading.Event, interval: float) -> None:
    try:
        while not stop.wait(interval):
            now = timezone.now()
            try:
                BundleLock.objects.filter(pk=repo_id, claimed_by=me).update(claimed_at=now)
                BundleBuild.objects.filter(
                    repository_id=repo_id, claimed_by=me, state=BuildState.RUNNING
                ).update(heartbeat_at=now)
            except DatabaseError:
                # A missed beat is not fatal: the lease is five beats long.
                log.warning(
                    "bundles: could not renew the build claim of repository %s", repo_id, exc_info=True
                )
    finally:
        connection.close()  # this thread's own connection


@contextlib.contextmanager
def heartbeat(repo_id: int, me: str) -> Iterator[None]:
    """Renew the claim (and its build row's heartbeat) while the block runs: git commands of a
    large build run for hours without a progress line."""
    stop = threading.Event()
    interval = max(settings.BUNDLE_STALE_CLAIM.total_seconds() / 5, 0.5)
    thread = threading.Thread(
        target=_beat, args=(repo_id, me, stop, interval), daemon=True, name=f"bundle-claim-{repo_id}"
    )
    thread.start()
    try:
        yield
    finally:
        # Not joined: a beat waiting on the database must not hold up the end of the build;
        # its updates are conditional on this claim, which is released next.
        stop.set()
