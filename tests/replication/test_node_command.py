"""`manage.py node status|resync|retire|unretire|fence-check`."""

from __future__ import annotations

import http.server
import io
import json
import socket
import threading
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings
from django.utils import timezone

from hostsite.celery import app
from hostsite.queues import replica_queue
from replication.models import ChangeConfirmation, Node, NodeRole, ReplicaState
from repos.models import ChangeKind, Repository, RepositoryChange
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("node", *args, stdout=out, stderr=out)
    return out.getvalue()


def fails(*args: str) -> tuple[str, str]:
    """(message of the CommandError, what was printed before it)."""
    out = io.StringIO()
    with pytest.raises(CommandError) as excinfo:
        call_command("node", *args, stdout=out, stderr=out)
    return str(excinfo.value), out.getvalue()


def make_node(name: str, role=NodeRole.REPLICA, *, seen: float | None = 0.0, retired=False) -> Node:
    now = timezone.now()
    return Node.objects.create(
        name=name,
        role=role,
        url=f"http://{name}:8000",
        last_seen_at=None if seen is None else now - timedelta(seconds=seen),
        retired_at=now if retired else None,
    )


def unique(prefix: str) -> str:
    # Queue names are per node, and a PostgreSQL run shares Redis with other sessions.
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def repository(name: str, generation: int, owner=None) -> Repository:
    owner = owner or UserFactory(username="olga")
    return Repository.objects.create(owner=owner, name=name, generation=generation)


def drain(queue: str) -> list[tuple[str, list, dict]]:
    """The task messages waiting in a queue, as (task name, args, kwargs), consumed."""
    found = []
    with app.connection_for_read() as conn:
        simple = conn.SimpleQueue(queue)
        try:
            while True:
                try:
                    message = simple.get(timeout=1)
                except simple.Empty:
                    break
                args, kwargs, _embed = message.decode()
                found.append((message.headers["task"], args, kwargs))
                message.ack()
        finally:
            simple.close()
    return found


# -- status -------------------------------------------------------------------------------


def test_status_text_and_json():
    make_node("p1", NodeRole.PRIMARY)
    r1 = make_node("r1")
    make_node("r2", seen=None)
    repo = repository("tools", 2)
    ReplicaState.objects.create(node=r1, repository=repo, generation=1, error="fetch: timed out")
    text = run("status")
    assert "1 repositories" in text
    assert "p1" in text and "primary" in text
    assert "r2 " in text and "down" in text and "seen never" in text
    assert "current 0, behind 1, missing 0" in text
    assert "error olga/tools (holds 1): fetch: timed out" in text
    assert "pending confirmations: 0" in text
    data = json.loads(run("status", "--json"))
    assert {n["name"] for n in data["nodes"]} == {"p1", "r1", "r2"}
    assert next(n for n in data["nodes"] if n["name"] == "r1")["replica"]["behind"] == 1


# -- resync -------------------------------------------------------------------------------


def test_resync_forgets_the_copy_and_queues_a_fresh_sync_on_each_live_replica():
    live, other, down = unique("r"), unique("r"), unique("r")
    nodes = [make_node(live), make_node(other), make_node(down, seen=3600)]
    make_node(unique("retired"), retired=True)
    repo = repository("tools", 7)
    for node in nodes:
        ReplicaState.objects.create(node=node, repository=repo, generation=7)
    try:
        out = run("resync", "OLGA/Tools")
        assert f"{live}: copying olga/tools afresh (generation 7)" in out
        assert not ReplicaState.objects.filter(node__name__in=[live, other]).exists()
        assert ReplicaState.objects.filter(node__name=down).exists(), "a down replica is not named"
        expected = [("replication.tasks.sync_repository", [repo.pk, 7], {"fresh": True})]
        assert drain(replica_queue(live)) == expected
        assert drain(replica_queue(other)) == expected
        assert drain(replica_queue(down)) == []
    finally:
        for name in (live, other, down):
            drain(replica_queue(name))


def test_resync_on_named_nodes_only():
    chosen, left = unique("r"), unique("r")
    make_node(chosen, seen=3600)  # named: down or not, it gets the job for when it is back
    make_node(left)
    repo = repository("tools", 3)
    try:
        run("resync", "olga/tools", "--node", chosen, "--node", chosen)
        assert drain(replica_queue(chosen)) == [
            ("replication.tasks.sync_repository", [repo.pk, 3], {"fresh": True})
        ]
        assert drain(replica_queue(left)) == []
    finally:
        drain(replica_queue(chosen))
        drain(replica_queue(left))


def test_resync_refusals():
    make_node("p1", NodeRole.PRIMARY)
    make_node("old", retired=True)
    repository("tools", 1)
    assert "no repository 'olga/nope'" in fails("resync", "olga/nope")[0]
    assert "no repository 'tools'" in fails("resync", "tools")[0]
    assert "no repository 'a/b/c'" in fails("resync", "a/b/c")[0]
    assert "no repository" in fails("resync", "olga/\x00tools")[0]
    message = fails("resync", "olga/tools", "--node", "ghost")[0]
    assert "no node named 'ghost'" in message and "old, p1" in message
    assert "p1 is the primary, not a replica" in fails("resync", "olga/tools", "--node", "p1")[0]
    assert "old is retired" in fails("resync", "olga/tools", "--node", "old")[0]
    assert "no live replica" in fails("resync", "olga/tools")[0]


# -- retire / unretire --------------------------------------------------------------------


def test_retire_completes_what_only_that_node_was_awaited_for():
    r1, r2 = make_node("r1"), make_node("r2", seen=3600)
    repo = repository("tools", 3)

    def change(generation: int, kind=ChangeKind.PURGE) -> RepositoryChange:
        return RepositoryChange.objects.create(
            repository=repo, generation=generation, kind=kind, needs_confirmation=True
        )

    confirmed_by_r1 = change(1)
    ChangeConfirmation.objects.create(change=confirmed_by_r1, node=r1)
    confirmed_by_none = change(2, ChangeKind.TAKEDOWN)
    ChangeConfirmation.objects.create(change=change(3), node=r2)  # r1 has not: stays pending
    out = run("retire", "r2")
    assert "r2 is retired" in out and "1 pending change(s) completed" in out
    confirmed_by_r1.refresh_from_db()
    confirmed_by_none.refresh_from_db()
    assert confirmed_by_r1.completed_at is not None
    assert confirmed_by_none.completed_at is None
    assert RepositoryChange.objects.filter(completed_at__isnull=True).count() == 2
    assert Node.objects.get(name="r2").retired_at is not None
    assert "was retired already" in run("retire", "r2")

    # The last replica retired: nothing is awaited any more.
    run("retire", "r1")
    assert not RepositoryChange.objects.filter(completed_at__isnull=True).exists()

    out = run("unretire", "r2")
    assert "r2 counts again" in out and Node.objects.get(name="r2").retired_at is None
    assert "r2 is not retired" in run("unretire", "r2")
    assert "no node named 'r9'" in fails("retire", "r9")[0]
    assert "no node named 'r9'" in fails("unretire", "r9")[0]


# -- fence-check --------------------------------------------------------------------------


@pytest.fixture
def silent_url():
    """A URL where nothing listens (a port just freed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def answering_url():
    """A URL where a web server answers (400, as a primary refusing the Host header would)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_error(400)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def replica_settings(primary_url: str):
    return override_settings(HOSTSITE_ROLE="replica", HOSTSITE_NODE="r1", PRIMARY_URL=primary_url)


@pytest.fixture
def promotable():
    """r1 holds every repository at its generation; p1, the primary, is long silent."""
    make_node("p1", NodeRole.PRIMARY, seen=3600)
    r1 = make_node("r1")
    olga = UserFactory(username="olga")
    for name, generation in (("a", 3), ("b", 1), ("empty", 0)):
        ReplicaState.objects.create(
            node=r1, repository=repository(name, generation, olga), generation=generation
        )
    return r1


def test_fence_check_passes_when_the_primary_is_gone_and_nothing_is_behind(promotable, silent_url):
    with replica_settings(silent_url):
        out = run("fence-check")
    assert "ok: primary p1 last seen 3600 s ago" in out
    assert f"ok: PRIMARY_URL {silent_url} does not answer" in out
    assert "ok: r1 holds every repository" in out
    assert "safe to promote r1" in out


def test_fence_check_refuses_while_the_primary_is_seen(promotable, silent_url):
    Node.objects.filter(name="p1").update(last_seen_at=timezone.now())
    with replica_settings(silent_url):
        message, out = fails("fence-check")
    assert "not safe to promote r1: 1 problem(s)" in message
    assert "refused: primary p1 was seen 0 s ago" in out


def test_fence_check_refuses_while_the_primary_url_answers(promotable, answering_url):
    with replica_settings(answering_url):
        message, out = fails("fence-check")
    assert f"refused: PRIMARY_URL {answering_url} answers (HTTP 400): fence it first" in out
    assert "1 problem(s)" in message


def test_fence_check_lists_what_this_node_would_lose(promotable, silent_url):
    olga = Repository.objects.get(name="a").owner
    repository("new", 1, olga)  # never copied
    Repository.objects.filter(name="a").update(generation=4)  # a change r1 lacks
    with replica_settings(silent_url):
        message, out = fails("fence-check")
    assert "1 problem(s)" in message
    assert "r1 does not hold 2 repositories at their current generation" in out
    assert "olga/a: holds generation 3 of 4" in out
    assert "olga/new: holds nothing of 1" in out
    assert "olga/b" not in out and "olga/empty" not in out


def test_fence_check_runs_only_on_a_replica(promotable):
    with override_settings(HOSTSITE_ROLE="primary", PRIMARY_URL=""):
        assert "run fence-check on the replica to promote" in fails("fence-check")[0]
