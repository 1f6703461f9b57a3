"""The catch-up sweep: a replica sends itself a sync of every repository it does not hold at
its current generation, and of every take-down or purge it has yet to confirm. Run when its
worker starts and every minute after (replication.nodes' heartbeat), so a replica that was
down, new, or wiped catches up without the primary knowing it was gone."""

from __future__ import annotations

import logging

from django.db.models import F, OuterRef, Q, Subquery

from hostsite.queues import replica_queue
from replication import nodes
from replication.models import ReplicaState
from repos import enqueue
from repos.models import Repository, RepositoryChange

log = logging.getLogger(__name__)

# Per round: a replica far behind sends itself this many jobs a minute, not a million at once.
BATCH = 1000


def behind(node, limit: int = BATCH) -> list[tuple[int, int]]:
    """(repository id, generation) of repositories this node holds no state for or an older one."""
    held = ReplicaState.objects.filter(node=node, repository=OuterRef("pk")).values("generation")[:1]
    return list(
        Repository.objects.annotate(held=Subquery(held))
        .filter(Q(held__isnull=True) | Q(held__lt=F("generation")))
        .order_by("pk")
        .values_list("pk", "generation")[:limit]
    )


def unconfirmed(node, limit: int = BATCH) -> list[tuple[int, int]]:
    """(repository id, generation) of changes awaiting this node's confirmation (purged
    repositories' among them: their copy must go)."""
    return list(
        RepositoryChange.objects.filter(needs_confirmation=True, completed_at__isnull=True)
        .exclude(confirmations__node=node)
        .order_by("id")
        .values_list("repository_id", "generation")[:limit]
    )


def catch_up() -> int:
    """Enqueue this replica's syncs on its own queue; returns how many."""
    if not nodes.is_replica():
        return 0
    node = nodes.current_node()
    jobs = dict(behind(node))
    for repo_id, generation in unconfirmed(node):
        jobs[repo_id] = max(generation, jobs.get(repo_id, 0))
    queue = replica_queue(node.name)
    for repo_id, generation in jobs.items():
        enqueue.send("replication.tasks.sync_repository", repo_id, generation, queue=queue)
    if jobs:
        log.info("catch-up: %d syncs sent to %s", len(jobs), queue)
    return len(jobs)
