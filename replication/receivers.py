"""Signal receivers: the replication app reacts to the log (repos.signals.repository_changed)
and holds a push's acknowledgement for REPLICATION_MIN_ACKS replicas (push_acknowledging)."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.dispatch import receiver

from hostsite.queues import replica_queue
from replication import nodes
from replication.models import ReplicaState
from repos import changelog, enqueue
from repos.models import CONFIRMED_KINDS
from repos.signals import push_acknowledging, repository_changed

log = logging.getLogger(__name__)

ACK_POLL_SECONDS = 0.01


@receiver(repository_changed, dispatch_uid="replication.dispatch")
def dispatch(sender, *, change_id, repository_id, generation, kind, **_kwargs) -> None:
    """Each live replica gets a job on its own queue; a down one gets none and catches up by
    its sweep when it is back. A change that needs confirming on a site without replicas is
    complete at once."""
    for node in nodes.live_replicas():
        enqueue.send(
            "replication.tasks.sync_repository", repository_id, generation, queue=replica_queue(node.name)
        )
    if kind in CONFIRMED_KINDS and not nodes.has_replicas():
        changelog.complete(change_id)


def replicas_holding(repository_id: int, generation: int) -> int:
    return ReplicaState.objects.filter(
        repository_id=repository_id, generation__gte=generation, node__retired_at__isnull=True
    ).count()


@receiver(push_acknowledging, dispatch_uid="replication.min_acks")
def wait_for_acks(sender, *, repository_id, generation, **_kwargs) -> str | None:
    """Hold the push's acknowledgement until REPLICATION_MIN_ACKS replicas hold its
    generation, at most REPLICATION_ACK_TIMEOUT_SECONDS. Past that the push is acknowledged
    all the same (it is durable on the primary), with a line saying how many hold it."""
    wanted = settings.REPLICATION_MIN_ACKS
    if not wanted or not generation:
        return None
    timeout = settings.REPLICATION_ACK_TIMEOUT_SECONDS
    deadline = time.monotonic() + timeout
    while (held := replicas_holding(repository_id, generation)) < wanted:
        if time.monotonic() >= deadline:
            noun = "replica holds" if wanted == 1 and held == 1 else "replicas hold"
            return f"hostsite: only {held} of {wanted} {noun} this push after {timeout} s"
        time.sleep(ACK_POLL_SECONDS)
    return None
