"""This node's row, which replicas are live, and the disk's identity.

Every Celery worker of every node runs a heartbeat thread (replication.heartbeat): it writes
the node's last_seen_at (`beat`) every NODE_HEARTBEAT_SECONDS, and on a replica also runs the
catch-up sweep (replication.catchup) at start and every CATCH_UP_SECONDS. A node silent for
NODE_DOWN_SECONDS is down: the dispatch sends it nothing, and it catches up by the sweep when
it is back.

A node's disk has an identity, a random id in `REPO_ROOT/.node-id` that the Node row repeats:
a replica whose disk was wiped or replaced (the file is gone or says something else) no
longer holds what its ReplicaState rows say, so they are dropped and it catches up from
scratch. Its confirmations stay: the take-downs and purges they confirm did happen.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from gitcore.git import run_git
from replication.models import Node, NodeRole, ReplicaState

log = logging.getLogger(__name__)

DISK_ID_FILE = ".node-id"
CATCH_UP_SECONDS = 60
# live_replicas() is asked once per change; a push storm must not make it a query per push.
LIVE_CACHE_SECONDS = 1.0

# name -> (when, answer): live_replicas() and has_replicas(), each asked once per change.
_cache: dict[str, tuple[float, Any]] = {}
_cache_lock = threading.Lock()


def _cached(name: str, compute: Callable[[], Any]) -> Any:
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(name)
        if hit is not None and now - hit[0] < LIVE_CACHE_SECONDS:
            return hit[1]
    answer = compute()
    with _cache_lock:
        _cache[name] = (now, answer)
    return answer


def is_replica() -> bool:
    return settings.HOSTSITE_ROLE == NodeRole.REPLICA


def _git_version() -> str:
    try:
        return run_git(["version"]).text.strip().removeprefix("git version ")[:40]
    except Exception:  # a node without a working git still registers; /status shows it
        log.exception("could not read git's version")
        return ""


def this_node(*, starting: bool = False) -> Node:
    """This node's row, created or refreshed (role, URL, git version, last seen)."""
    now = timezone.now()
    values: dict[str, object] = {
        "role": settings.HOSTSITE_ROLE,
        "url": settings.NODE_URL,
        "last_seen_at": now,
    }
    version = _git_version() if starting else None
    if starting:
        values.update(started_at=now, git_version=version)
    node, created = Node.objects.get_or_create(
        name=settings.HOSTSITE_NODE,
        defaults={"started_at": now, "git_version": version or _git_version(), **values},
    )
    if not created:
        Node.objects.filter(pk=node.pk).update(**values)
        for key, value in values.items():
            setattr(node, key, value)
    return node


def current_node() -> Node:
    """This node's row without writing it (created at first use)."""
    node = Node.objects.filter(name=settings.HOSTSITE_NODE).first()
    return node if node is not None else this_node()


def beat() -> bool:
    """Write last_seen_at; True when the node had to register again, or had been silent long
    enough to count as down: the primary sent it nothing meanwhile, so it must catch up."""
    now = timezone.now()
    row = Node.objects.filter(name=settings.HOSTSITE_NODE)
    was = row.values_list("last_seen_at", flat=True).first()
    if was is None or not row.update(last_seen_at=now):
        # The row is gone (an operator deleted the node): register again, as at start.
        check_disk(this_node(starting=True))
        forget_live_replicas()
        return True
    return now - was >= timedelta(seconds=settings.NODE_DOWN_SECONDS)


def registered_replicas():
    """Replicas whose confirmations are awaited: every one not retired, live or not."""
    return Node.objects.filter(role=NodeRole.REPLICA, retired_at__isnull=True)


def live_replicas() -> list[Node]:
    """Replicas that are not retired and were seen within NODE_DOWN_SECONDS (cached ~1 s)."""

    def query() -> list[Node]:
        cutoff = timezone.now() - timedelta(seconds=settings.NODE_DOWN_SECONDS)
        return list(registered_replicas().filter(last_seen_at__gte=cutoff))

    return _cached("live", query)


def has_replicas() -> bool:
    """Whether the site has any replica that is not retired (cached ~1 s): a single node
    writes no read-your-writes marks and waits for no confirmations."""
    return _cached("registered", lambda: registered_replicas().exists())


def forget_live_replicas() -> None:
    """Drop the cached answer (a node was just registered or retired; tests)."""
    with _cache_lock:
        _cache.clear()


# --- disk identity ----------------------------------------------------------------------------


def _disk_id_path() -> Path:
    return Path(settings.REPO_ROOT) / DISK_ID_FILE


def read_disk_id() -> str:
    try:
        return _disk_id_path().read_text().strip()
    except (FileNotFoundError, NotADirectoryError):
        return ""


def check_disk(node: Node) -> bool:
    """Compare the disk's id with the node's; on a mismatch forget what the node held and
    give the disk a new id. True when the disk was found wiped or replaced."""
    found = read_disk_id()
    if found and found == node.disk_id:
        return False
    known = node.disk_id
    dropped, _ = ReplicaState.objects.filter(node=node).delete()
    new_id = secrets.token_hex(16)
    path = _disk_id_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{DISK_ID_FILE}.tmp-{os.getpid()}")
    tmp.write_text(new_id + "\n")
    os.replace(tmp, path)
    Node.objects.filter(pk=node.pk).update(disk_id=new_id)
    node.disk_id = new_id
    if known:
        log.warning(
            "node %s: its disk says %r, not %r (wiped or replaced): forgot %d replica states",
            node.name,
            found,
            known,
            dropped,
        )
    return True
