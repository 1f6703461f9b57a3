"""Nodes and replication's settings (replication/), kept beside hostsite.settings, which imports
them. Read without Django too: `make run` (hostsite.run) decides from them which processes a
node runs (a replica runs no beat and consumes only its own queue)."""

from __future__ import annotations

import re
import socket

from hostsite.env import env_int, env_str

__all__ = [
    "HOSTSITE_NODE",
    "HOSTSITE_ROLE",
    "NODE_DOWN_SECONDS",
    "NODE_HEARTBEAT_SECONDS",
    "NODE_URL",
    "PRIMARY_PUBLIC_URL",
    "PRIMARY_URL",
    "REPLICATION_ACK_TIMEOUT_SECONDS",
    "REPLICATION_FETCH_TIMEOUT_SECONDS",
    "REPLICATION_MIN_ACKS",
    "REPLICA_MAX_LAG_SECONDS",
]

NODE_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
ROLES = ("primary", "replica")


class NodeSettingsError(ValueError):
    pass


def _node_name() -> str:
    value = env_str("HOSTSITE_NODE", "") or socket.gethostname().split(".")[0].lower()
    # A host name may hold what a node name may not (underscores, 63 characters): keep the rest.
    name = re.sub(r"[^a-z0-9-]", "-", value.lower()).strip("-")[:40] or "node"
    if env_str("HOSTSITE_NODE", "") and name != value:
        raise NodeSettingsError(
            f"HOSTSITE_NODE={value!r}: use 1 to 40 lowercase letters, digits and '-', starting with a letter or digit"
        )
    return name


# This node's name: its Celery queue is `replica-<name>` when it is a replica. Unset: the host
# name, and a site that never sets it runs as one node, as before replication existed.
HOSTSITE_NODE = _node_name()
HOSTSITE_ROLE = env_str("HOSTSITE_ROLE", "primary").lower()
if HOSTSITE_ROLE not in ROLES:
    raise NodeSettingsError(f"HOSTSITE_ROLE must be primary or replica, not {HOSTSITE_ROLE!r}")
# The primary's internal URL (http://primary:8000): replicas fetch from it and forward to it.
PRIMARY_URL = env_str("PRIMARY_URL", "").rstrip("/")
if HOSTSITE_ROLE == "replica" and not PRIMARY_URL:
    raise NodeSettingsError("a replica needs PRIMARY_URL, the primary's internal URL")
# This node's own internal URL, as PRIMARY_URL names the primary's: shown on the node's row.
NODE_URL = env_str("NODE_URL", "").rstrip("/")
# Where a replica sends git clients that push (307): the primary as clients reach it.
PRIMARY_PUBLIC_URL = (env_str("PRIMARY_PUBLIC_URL", "") or PRIMARY_URL).rstrip("/")
# An anonymous read is served by a replica whose copy is this many seconds behind at most;
# older, or a signed-in user's own write it does not hold yet, and the primary answers.
REPLICA_MAX_LAG_SECONDS = env_int("REPLICA_MAX_LAG_SECONDS", 5, minimum=0)
# A push is acknowledged once this many replicas hold it (0: once durable on the primary).
REPLICATION_MIN_ACKS = env_int("REPLICATION_MIN_ACKS", 0, minimum=0, maximum=100)
# How long a push waits for those acknowledgements before it is acknowledged with a warning.
REPLICATION_ACK_TIMEOUT_SECONDS = env_int("REPLICATION_ACK_TIMEOUT_SECONDS", 10, minimum=1)
REPLICATION_FETCH_TIMEOUT_SECONDS = env_int("REPLICATION_FETCH_TIMEOUT_SECONDS", 3600, minimum=10)
# Each node's worker writes its heartbeat this often; one silent for NODE_DOWN_SECONDS is down
# (skipped by the dispatch, shown as down on /status).
NODE_HEARTBEAT_SECONDS = env_int("NODE_HEARTBEAT_SECONDS", 5, minimum=1)
NODE_DOWN_SECONDS = env_int("NODE_DOWN_SECONDS", 30, minimum=2)
