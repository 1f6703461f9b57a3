"""One bundle build at a time per repository: repos.locking's "bundles" claim, so a build
excludes builds on every worker host sharing the database, and a worker that dies (even by
SIGKILL) releases it with its process or connection.

The holder records its name (`host:pid:nonce`) in BundleLock and on its BundleBuild row, for
the history page and for bundles.services' reaper: a recorded holder whose lock is free is
dead. While a build runs, a heartbeat renews both rows every fifth of BUNDLE_STALE_CLAIM, so
a build whose worker hangs shows its last sign of life (the reaper fails it after the lease).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from bundles.models import BuildState, BundleBuild, BundleLock
from repos import locking

log = logging.getLogger(__name__)

KIND = "bundles"

# The claims this process holds, by holder name: release() gets a name back from the caller.
_held: dict[str, locking.Claim] = {}


def holder_name() -> str:
    """A new claim name for this process."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def claim(repo_id: int) -> str | None:
    """The claim's name if this process now holds the repository's build lock, else None."""
    me = holder_name()
    held = locking.claim(KIND, repo_id, note=me)
    if held is None:
        return None
    try:
        # Whatever name the row held is a dead holder's: the lock was free.
        BundleLock.objects.update_or_create(
            repository_id=repo_id, defaults={"claimed_at": timezone.now(), "claimed_by": me}
        )
    except BaseException:
        held.release()
        raise
    _held[me] = held
    return me


def release(repo_id: int, me: str) -> None:
    held = _held.pop(me, None)
    try:
        BundleLock.objects.filter(pk=repo_id, claimed_by=me).update(claimed_at=None, claimed_by="")
    finally:
        if held is not None:
            held.release()


def is_claimed(repo_id: int) -> bool:
    """A build holds the repository now (a dead one's record does not count)."""
    return locking.is_claimed(KIND, repo_id)


def holders(repo_ids: Iterable[int]) -> dict[int, str]:
    """repository id -> recorded claim name, for those among repo_ids with a record: the live
    holder's, or a dead one's until the next claim (holder_is_dead tells them apart)."""
    rows = BundleLock.objects.filter(pk__in=list(repo_ids), claimed_at__isnull=False)
    return dict(rows.values_list("repository_id", "claimed_by"))


def holder_is_dead(holder: str) -> bool:
    """True if `holder` no longer holds its repository's lock. Holders record their name after
    taking the lock and clear it before letting go, so a recorded name on a free lock died."""
    repo_id = BundleLock.objects.filter(claimed_by=holder).values_list("repository_id", flat=True).first()
    return repo_id is None or not locking.is_claimed(KIND, repo_id)


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
