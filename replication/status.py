"""What /status, /status.json and `manage.py node status` show: the site's nodes and how far
each replica is behind the log.

Every figure is a bounded number of queries whatever the number of repositories: three
aggregates per replica (its current, behind and missing counts and its lag), two for its
latest sync errors, and five for the pending confirmations. A site has a handful of nodes, so
a query per node is cheap; a query per repository (10,000 of them) would not be.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Exists, F, Min, OuterRef, Q, Subquery, Value
from django.utils import timezone

from replication import nodes as site_nodes
from replication.models import ChangeConfirmation, Node, NodeRole, ReplicaState
from repos.models import Repository, RepositoryChange

ERRORS_SHOWN = 20
PENDING_SHOWN = 50


@dataclass
class SyncError:
    repository: str
    generation: int
    error: str
    failures: int
    synced_at: datetime | None


@dataclass
class ReplicaFigures:
    current: int
    behind: int
    missing: int
    # Seconds since the oldest change this replica lacks, over every repository; None when it
    # lacks none.
    lag_seconds: float | None
    errors_count: int
    errors: list[SyncError] = field(default_factory=list)


@dataclass
class NodeStatus:
    name: str
    role: str
    url: str
    last_seen_at: datetime | None
    up: bool
    git_version: str
    started_at: datetime | None
    retired: bool
    replica: ReplicaFigures | None


@dataclass
class PendingChange:
    id: int
    repository: str
    generation: int
    kind: str
    created_at: datetime
    awaiting: list[str]


@dataclass
class SiteStatus:
    node: str  # the node that answered
    role: str
    generated_at: datetime
    down_after_seconds: int
    repositories: int
    nodes: list[NodeStatus]
    pending_count: int
    pending: list[PendingChange]

    def as_json(self) -> dict:
        def encode(value):
            if isinstance(value, datetime):
                return value.isoformat()
            if isinstance(value, dict):
                return {key: encode(item) for key, item in value.items()}
            if isinstance(value, list):
                return [encode(item) for item in value]
            return value

        return encode(asdict(self))


def is_up(node: Node, now: datetime | None = None) -> bool:
    if node.last_seen_at is None:
        return False
    now = now or timezone.now()
    return node.last_seen_at >= now - timedelta(seconds=settings.NODE_DOWN_SECONDS)


def _waiting_since(repository, generation):
    """The created_at of a repository's change number `generation` (expressions), found by
    the unique (repository, generation) index: the first change a replica lacks is the one
    right after what it holds, and its age is how long that repository has been waiting."""
    return Subquery(
        RepositoryChange.objects.filter(repository=repository, generation=generation)
        .order_by()
        .values("created_at")[:1]
    )


def replica_figures(node: Node, now: datetime | None = None) -> ReplicaFigures:
    now = now or timezone.now()
    # Three aggregates, each a plan PostgreSQL runs as a join or an anti-join over the indexes:
    # what the replica holds (current or behind), the oldest change it lacks where it holds a
    # copy, and the repositories it holds none of (their first change is what they wait for).
    states = ReplicaState.objects.filter(node=node)
    held = states.aggregate(
        current=Count("pk", filter=Q(generation__gte=F("repository__generation"))),
        behind=Count("pk", filter=Q(generation__lt=F("repository__generation"))),
    )
    behind_since = states.filter(generation__lt=F("repository__generation")).aggregate(
        oldest=Min(_waiting_since(OuterRef("repository_id"), OuterRef("generation") + 1))
    )["oldest"]
    missing = Repository.objects.filter(
        ~Exists(ReplicaState.objects.filter(node=node, repository=OuterRef("pk")))
    ).aggregate(count=Count("pk"), oldest=Min(_waiting_since(OuterRef("pk"), Value(1))))
    waiting = [when for when in (behind_since, missing["oldest"]) if when is not None]
    oldest = min(waiting) if waiting else None
    errors = ReplicaState.objects.filter(node=node).exclude(error="")
    latest = list(errors.select_related("repository__owner").order_by("-synced_at", "-pk")[:ERRORS_SHOWN])
    return ReplicaFigures(
        current=held["current"],
        behind=held["behind"],
        missing=missing["count"],
        lag_seconds=round((now - oldest).total_seconds(), 1) if oldest else None,
        errors_count=errors.count(),
        errors=[
            SyncError(
                repository=state.repository.full_name,
                generation=state.generation,
                error=state.error,
                failures=state.failures,
                synced_at=state.synced_at,
            )
            for state in latest
        ],
    )


def pending_changes(limit: int = PENDING_SHOWN) -> tuple[int, list[PendingChange]]:
    """Take-downs and purges some replica has not confirmed yet (oldest first), each with the
    replicas still awaited, and how many there are in all."""
    pending = RepositoryChange.objects.filter(needs_confirmation=True, completed_at__isnull=True)
    changes = list(pending.order_by("pk")[:limit])
    total = pending.count()
    if not changes:
        return total, []
    counted = list(site_nodes.registered_replicas().order_by("name").values_list("pk", "name"))
    confirmed: dict[int, set[int]] = {}
    for change_id, node_id in ChangeConfirmation.objects.filter(change__in=changes).values_list(
        "change_id", "node_id"
    ):
        confirmed.setdefault(change_id, set()).add(node_id)
    names = _repository_names({change.repository_id for change in changes})
    return total, [
        PendingChange(
            id=change.pk,
            repository=names.get(change.repository_id, f"#{change.repository_id} (purged)"),
            generation=change.generation,
            kind=change.kind,
            created_at=change.created_at,
            awaiting=[name for pk, name in counted if pk not in confirmed.get(change.pk, set())],
        )
        for change in changes
    ]


def _repository_names(ids: set[int]) -> dict[int, str]:
    rows = Repository.objects.filter(pk__in=ids).values_list("pk", "owner__username", "name")
    return {pk: f"{owner}/{name}" for pk, owner, name in rows}


def site_status() -> SiteStatus:
    now = timezone.now()
    nodes = list(Node.objects.order_by("role", "name"))
    pending_count, pending = pending_changes()
    return SiteStatus(
        node=settings.HOSTSITE_NODE,
        role=settings.HOSTSITE_ROLE,
        generated_at=now,
        down_after_seconds=settings.NODE_DOWN_SECONDS,
        repositories=Repository.objects.count(),
        nodes=[
            NodeStatus(
                name=node.name,
                role=node.role,
                url=node.url,
                last_seen_at=node.last_seen_at,
                up=is_up(node, now),
                git_version=node.git_version,
                started_at=node.started_at,
                retired=node.retired_at is not None,
                replica=replica_figures(node, now) if node.role == NodeRole.REPLICA else None,
            )
            for node in nodes
        ],
        pending_count=pending_count,
        pending=pending,
    )
