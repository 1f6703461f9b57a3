"""One bundle build at a time per repository: a claim taken with a conditional UPDATE
(repos.maintenance's pattern, Zulip's), released on every exit path.

A claim names its holder (`host:pid:nonce`). A worker killed with SIGKILL cannot release it,
so a claim whose process is gone from this host is taken over at once; a claim from another
host is taken over once older than BUNDLE_STALE_CLAIM.
"""

from __future__ import annotations

import os
import socket
import uuid

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from bundles.models import BundleLock


def _holder_is_dead(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def claim(repo_id: int) -> str | None:
    """The claim's name if this process now holds the repository's lock, else None."""
    BundleLock.objects.bulk_create([BundleLock(repository_id=repo_id)], ignore_conflicts=True)
    me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    now = timezone.now()
    stale = now - settings.BUNDLE_STALE_CLAIM
    locks = BundleLock.objects.filter(pk=repo_id)
    if locks.filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale)).update(claimed_at=now, claimed_by=me):
        return me
    holder = locks.values_list("claimed_by", flat=True).first()
    # Conditional on the same holder, so two workers cannot both take over a dead claim.
    if holder and _holder_is_dead(holder) and locks.filter(claimed_by=holder).update(claimed_at=now, claimed_by=me):
        return me
    return None


def release(repo_id: int, me: str) -> None:
    BundleLock.objects.filter(pk=repo_id, claimed_by=me).update(claimed_at=None, claimed_by="")


def is_claimed(repo_id: int) -> bool:
    return BundleLock.objects.filter(pk=repo_id, claimed_at__isnull=False).exists()
