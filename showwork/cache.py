"""The Work graph, cached by the repository's ref state, so a repeated view runs no git.

Keyed by a per-repository version token, not by hashing the refs: reading every ref to hash
them is itself the cost being avoided (100k workspace refs are a 7 MB for-each-ref). The
token is replaced (showwork.receivers) whenever refs move: every push, and merges through the
web (recorded as pushes), `push_recorded`; merged-ref cleanup archiving a workspace ref,
`workspace_ref_archived`; a proposal opened, closed or merged (a node's link changes). A
restore of an archived ref sends no signal and updates its row with `.update()`, so the key
also carries the latest restore time (one indexed query). The rest of the key: the filters,
the hidden workspaces the viewer may not see, the hour (heads age out of the 30-day window),
the repository's path and creation time (ids may be reused, e.g. by test databases), and the
generation of its refs this node holds (`_generation`: a replica's cache is not the primary's).

Tokens are random, never counters: if the cache loses a token, the new one cannot meet an
entry cached under an old one. The cache is Django's default cache, which settings make a
file-based cache under VAR_DIR (shared by every web worker and the Celery worker that runs
cleanup; LocMem would be per process, so a push seen by one worker would not invalidate the
others') or Redis with CACHE_URL.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max

from replication.models import ReplicaState
from repos.models import Repository
from reviews.models import Proposal
from showwork import selection
from showwork.layout import Layout, layout
from showwork.model import Graph
from workspaces.models import ArchivedRef

GRAPH_TIMEOUT = 6 * 3600


@dataclass
class View:
    graph: Graph
    layout: Layout
    branches: list[str]
    hit: bool = False


def _version_key(repository_id: int) -> str:
    return f"showwork:version:{repository_id}"


def bump(repository_id: int) -> None:
    """The repository's refs moved: every cached graph of it is stale."""
    cache.set(_version_key(repository_id), uuid.uuid4().hex, None)


def version(repository_id: int) -> str:
    token = cache.get(_version_key(repository_id))
    if token is None:
        cache.add(_version_key(repository_id), uuid.uuid4().hex, None)
        token = cache.get(_version_key(repository_id)) or "unknown"
    return token


def _generation(repo: Repository) -> str:
    """The generation of the refs this node's disk holds. The token is replaced where the
    change happened, on the primary (its receivers and their task run there): a replica's own
    cache never sees that, so its key names the generation it holds, and the proposals it
    reads from the shared database (opened, closed: the token's other reason to change). On
    the primary the repository's row says it, no query."""
    if settings.HOSTSITE_ROLE != "replica":
        return f"g{repo.generation}"
    held = (
        ReplicaState.objects.filter(node__name=settings.HOSTSITE_NODE, repository_id=repo.pk)
        .values_list("generation", flat=True)
        .first()
    )
    proposals = Proposal.objects.filter(repository_id=repo.pk).aggregate(n=Count("pk"), at=Max("updated_at"))
    at = proposals["at"].isoformat() if proposals["at"] else ""
    return f"held{held}:{proposals['n']}:{at}"


def _restored_at(repo: Repository) -> str:
    latest = ArchivedRef.objects.filter(repository=repo, state=ArchivedRef.State.RESTORED).aggregate(
        at=Max("restored_at")
    )["at"]
    return latest.isoformat() if latest else ""


def graph_key(
    repo: Repository,
    *,
    viewer,
    user: str | None,
    branch: str | None,
    since: timedelta | None,
    cap: int,
    now: int,
) -> str:
    hidden = sorted(selection.hidden_owners(viewer, repo))
    parts = [
        version(repo.pk),
        _generation(repo),
        str(repo.disk_path),
        repo.created_at.isoformat() if repo.created_at else "",
        _restored_at(repo),
        user or "",
        branch if branch is not None else "\0",
        "" if since is None else str(int(since.total_seconds())),
        str(cap),
        str(now // 3600),
        *hidden,
    ]
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
    return f"showwork:graph:{repo.pk}:{digest}"


def work_view(
    repo: Repository,
    *,
    viewer,
    user: str | None = None,
    branch: str | None = None,
    since: timedelta | None = selection.DEFAULT_SINCE,
    cap: int = selection.DEFAULT_CAP,
    now: int | None = None,
) -> View:
    """The graph, its layout and the branch names, from the cache or computed and stored."""
    now = int(time.time()) if now is None else now
    key = graph_key(repo, viewer=viewer, user=user, branch=branch, since=since, cap=cap, now=now)
    found = cache.get(key)
    if found is not None:
        graph, lay, branches = found
        return View(graph, lay, branches, hit=True)
    graph, branches = selection.select_with_branches(
        repo, viewer=viewer, user=user, branch=branch, since=since, cap=cap, now=now
    )
    lay = layout(graph)
    cache.set(key, (graph, lay, branches), GRAPH_TIMEOUT)
    return View(graph, lay, branches)
