"""The routing decisions in-process: which requests are whose, the freshness rule and what it
costs in queries, the forwarding mark a client cannot forge, the loop guard, and the
read-your-writes marks."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponse
from django.test import RequestFactory
from django.utils import timezone

from replication import forward, freshness, marks, routing
from replication.middleware import ReplicaRoutingMiddleware
from replication.models import Node, ReplicaState, WriteMark
from repos import changelog, services
from repos.models import RepositoryChange
from repos.tokens import digest
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

rf = RequestFactory()


class Echo:
    """The rest of the stack: says which client address it saw."""

    def __init__(self):
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        return HttpResponse(request.META["REMOTE_ADDR"])


@pytest.fixture
def replica(settings):
    settings.HOSTSITE_ROLE = "replica"
    settings.HOSTSITE_NODE = "r1"
    settings.PRIMARY_URL = "http://127.0.0.1:9"  # nothing listens: forwarding would fail loudly
    settings.REPLICA_MAX_LAG_SECONDS = 5
    return settings


@pytest.mark.parametrize(
    ("method", "path", "route"),
    [
        ("GET", "/alice/project.git/info/refs?service=git-receive-pack", routing.Route.PUSH),
        ("POST", "/alice/project/git-receive-pack", routing.Route.PUSH),
        ("GET", "/alice/project.git/info/refs?service=git-upload-pack", routing.Route.REPOSITORY),
        ("POST", "/alice/project.git/git-upload-pack", routing.Route.REPOSITORY),
        ("GET", "/alice/project", routing.Route.REPOSITORY),
        ("GET", "/alice/project/raw/main/README", routing.Route.REPOSITORY),
        ("GET", "/alice/project/archive/main.tar.gz", routing.Route.REPOSITORY),
        ("GET", "/alice/project.git/bundle-list", routing.Route.REPOSITORY),
        ("GET", "/alice/project/pushlog", routing.Route.REPOSITORY),
        ("GET", "/api/v1/repos/alice/project/pushes", routing.Route.REPOSITORY),
        ("POST", "/alice/project/settings", routing.Route.FORWARD),
        ("DELETE", "/api/v1/repos/alice/project", routing.Route.FORWARD),
        ("POST", "/login", routing.Route.FORWARD),
        ("PUT", "/api/v1/user", routing.Route.FORWARD),
        ("GET", "/", routing.Route.LOCAL),
        ("GET", "/alice", routing.Route.LOCAL),
        ("GET", "/settings/profile", routing.Route.LOCAL),
        ("GET", "/static/css/site.css", routing.Route.LOCAL),
        ("POST", "/_replication/anything", routing.Route.LOCAL),
        ("GET", "/status", routing.Route.LOCAL),
        # On the primary's disk: an export its worker wrote, the host keys of its sshd.
        ("GET", "/settings/workspace-exports/download/7", routing.Route.FORWARD),
        ("GET", "/help/ssh", routing.Route.FORWARD),
        ("GET", "/settings/workspace-exports", routing.Route.LOCAL),
        ("GET", "/no/such/page/at/all/here", routing.Route.LOCAL),
    ],
)
def test_decisions(method, path, route):
    request = rf.generic(method, path)
    assert routing.decide(request).route is route


def test_repository_routes_name_the_repository():
    decision = routing.decide(rf.get("/Alice/Project.git/info/refs?service=git-upload-pack"))
    assert (decision.owner, decision.name) == ("Alice", "Project")


def test_the_primary_adds_a_header_and_no_query(settings, django_assert_num_queries):
    settings.HOSTSITE_ROLE = "primary"
    settings.HOSTSITE_NODE = "p1"
    echo = Echo()
    with django_assert_num_queries(0):
        response = ReplicaRoutingMiddleware(echo)(rf.get("/alice/project"))
        ReplicaRoutingMiddleware(echo)(rf.post("/alice/project/settings"))
    assert response["X-Hostsite-Node"] == "p1" and echo.calls == 2


def _marked(path: str, *, node="r1", client="203.0.113.7", signature=None, method="GET"):
    headers = {
        "X-Hostsite-Forwarded-By": node,
        "X-Hostsite-Forwarded-For": client,
        "X-Hostsite-Forwarded-Signature": signature if signature is not None else "",
    }
    return rf.generic(method, path, headers=headers)


def test_a_nodes_mark_sets_the_client_address(settings):
    settings.HOSTSITE_ROLE = "primary"
    settings.HOSTSITE_NODE = "r1"  # signs as the replica would
    signature = forward.sign_mark("203.0.113.7", "POST", "/new")
    settings.HOSTSITE_NODE = "p1"
    response = ReplicaRoutingMiddleware(Echo())(_marked("/new", signature=signature, method="POST"))
    assert response.content == b"203.0.113.7"


@pytest.mark.parametrize(
    "forgery",
    [
        {"signature": ""},  # no signature at all
        {"signature": "1xYetb:98HFlGDEzUy0VIMzaMHbCuV-4vecEp4J2S4sdCFLllI"},  # made up
        {"client": "198.51.100.1"},  # another address under a valid signature
        {"node": "r2"},  # another node's name under it
        {"path": "/alice/project/settings/delete"},  # replayed on another request
        {"method": "GET"},
        {"key": "another-secret-key"},  # signed with a key the nodes do not share
    ],
)
def test_a_forged_mark_is_ignored(settings, forgery):
    settings.HOSTSITE_ROLE = "primary"
    settings.HOSTSITE_NODE = "r1"
    if "key" in forgery:
        settings.SECRET_KEY = forgery["key"]
    signature = forward.sign_mark("203.0.113.7", "POST", "/new")
    settings.SECRET_KEY = "insecure-test-only-key-of-the-nodes"
    if "key" not in forgery:
        signature = forward.sign_mark("203.0.113.7", "POST", "/new")
    settings.HOSTSITE_NODE = "p1"
    request = _marked(
        forgery.get("path", "/new"),
        node=forgery.get("node", "r1"),
        client=forgery.get("client", "203.0.113.7"),
        signature=forgery.get("signature", signature),
        method=forgery.get("method", "POST"),
    )
    response = ReplicaRoutingMiddleware(Echo())(request)
    assert response.content == b"127.0.0.1"
    assert not any(key.startswith("HTTP_X_HOSTSITE_FORWARDED") for key in request.META)


def test_a_replica_never_forwards_a_forwarded_request(replica):
    signature = forward.sign_mark("203.0.113.7", "POST", "/new")
    echo = Echo()
    response = ReplicaRoutingMiddleware(echo)(_marked("/new", signature=signature, method="POST"))
    assert response.status_code == 508 and echo.calls == 0
    assert b"PRIMARY_URL" in response.content


def test_unavailable_primary_answers_503_without_trying_twice(replica):
    echo = Echo()
    forward.note_primary(True)
    response = ReplicaRoutingMiddleware(echo)(rf.post("/api/v1/repos", content_type="application/json"))
    assert response.status_code == 503 and response["Retry-After"] == "30"
    assert response["Content-Type"] == "application/json" and echo.calls == 0
    # Remembered for a moment: the next one does not wait for a connection.
    assert forward.primary_available() is False
    push = rf.get("/alice/project.git/info/refs?service=git-receive-pack")
    response = ReplicaRoutingMiddleware(echo)(push)
    assert response.status_code == 503 and response.content.decode() == forward.UNAVAILABLE + "\n"
    forward.note_primary(True)


def test_a_primary_that_answered_a_moment_ago_is_asked_again_before_a_push(replica):
    # An answer is not remembered: a primary stopped right after it is not sent the push.
    forward.note_primary(True)
    push = rf.get("/alice/project.git/info/refs?service=git-receive-pack")
    response = ReplicaRoutingMiddleware(Echo())(push)
    assert response.status_code == 503 and forward.known_down()
    forward.note_primary(True)
    assert not forward.known_down()


@pytest.fixture
def held(replica):
    """alice/project, created here (so on this node's disk), held at its generation."""
    alice = UserFactory(username="alice")
    repo = services.repository_create(owner=alice, name="project")
    repo.refresh_from_db()
    node = Node.objects.create(name="r1", role="replica")
    state = ReplicaState.objects.create(node=node, repository=repo, generation=repo.generation)
    return repo, state, alice


def _change(repo, *, age: float = 0, actor=None) -> int:
    from django.db import transaction

    with transaction.atomic():
        change = changelog.record(repo.pk, "web", actor=actor)
    RepositoryChange.objects.filter(pk=change.pk).update(created_at=timezone.now() - timedelta(seconds=age))
    return change.generation


def _serves(repo, reader, queries: int, django_assert_num_queries) -> bool:
    owner, name = repo.full_name.upper().split("/")  # looked up as the views do: any case
    with django_assert_num_queries(queries):
        holding = freshness.holding(owner, name)
        assert holding is not None
        return freshness.serves_locally(holding, reader)


def test_freshness(held, django_assert_num_queries):
    repo, state, alice = held
    anonymous, bob = freshness.ANONYMOUS, freshness.Reader(username="bob")
    assert _serves(repo, anonymous, 1, django_assert_num_queries)

    generation = _change(repo, age=1, actor=alice)
    marks.record_write(alice.pk, repo.pk, generation)
    assert _serves(repo, anonymous, 2, django_assert_num_queries)
    assert _serves(repo, bob, 2, django_assert_num_queries)
    for reader in (
        freshness.Reader(user_id=alice.pk),
        freshness.Reader(username="ALICE"),
        freshness.Reader(token_digest=digest(services.token_create(user=alice)[1])),
    ):
        assert not _serves(repo, reader, 2, django_assert_num_queries)

    RepositoryChange.objects.filter(repository_id=repo.pk, generation=generation).update(
        created_at=timezone.now() - timedelta(seconds=5)
    )
    assert not _serves(repo, anonymous, 2, django_assert_num_queries)

    state.generation = generation
    state.save()
    assert _serves(repo, freshness.Reader(user_id=alice.pk), 1, django_assert_num_queries)


def test_no_copy_means_forward(held, django_assert_num_queries):
    repo, state, _ = held
    import shutil

    shutil.rmtree(repo.disk_path)
    assert not _serves(repo, freshness.ANONYMOUS, 1, django_assert_num_queries)
    state.delete()
    assert not _serves(repo, freshness.ANONYMOUS, 1, django_assert_num_queries)
    assert freshness.holding("alice", "renamed-away") is None


def test_who_is_reading():
    def reader(**headers):
        return freshness.reader_of(rf.get("/", headers=headers))

    assert reader() == freshness.ANONYMOUS
    basic = base64.b64encode(b"Alice:hst_" + b"x" * 40).decode()
    assert reader(Authorization=f"Basic {basic}") == freshness.Reader(username="Alice")
    token = "hst_" + "y" * 40
    assert reader(Authorization=f"Bearer {token}") == freshness.Reader(token_digest=digest(token))
    assert reader(Authorization="Basic !!!") == freshness.ANONYMOUS
    assert reader(Authorization="Bearer not-a-token") == freshness.ANONYMOUS


def test_a_session_names_its_user(db):
    user = UserFactory()
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session.create()
    request = rf.get("/")
    request.session = SessionStore(session.session_key)
    assert freshness.reader_of(request) == freshness.Reader(user_id=user.pk)


@pytest.mark.django_db(transaction=True)
def test_a_single_node_writes_no_marks():
    from replication import nodes

    nodes.forget_live_replicas()
    alice = UserFactory(username="alice")
    repo = services.repository_create(owner=alice, name="project")
    _change(repo, actor=alice)
    assert not WriteMark.objects.exists()  # no replica to read from: nothing to remember


@pytest.mark.django_db(transaction=True)
def test_write_marks_follow_the_log_upwards_only():
    from replication import nodes

    Node.objects.create(name="r-marks", role="replica")
    nodes.forget_live_replicas()
    alice = UserFactory(username="alice")
    repo = services.repository_create(owner=alice, name="project")
    generation = _change(repo, actor=alice)  # committed: the receiver ran
    assert WriteMark.objects.get(user=alice, repository=repo).generation == generation
    marks.record_write(alice.pk, repo.pk, generation - 1)  # a late receiver of an older change
    assert WriteMark.objects.get(user=alice, repository=repo).generation == generation
    _change(repo)  # the platform's own change: nobody's write
    assert WriteMark.objects.get(user=alice, repository=repo).generation == generation
    marks.record_write(alice.pk, 10**9, 1)  # a repository gone already: nothing, no error


def test_work_graph_keys_follow_the_generation_held(held, settings):
    from showwork.cache import graph_key

    repo, state, alice = held

    def key():
        return graph_key(repo, viewer=alice, user=None, branch=None, since=None, cap=10, now=0)

    on_replica = key()
    repo.generation += 1  # the primary's row moved on; this replica's copy did not
    assert key() == on_replica
    state.generation = repo.generation
    state.save()
    assert key() != on_replica
    settings.HOSTSITE_ROLE = "primary"
    on_primary = key()
    repo.generation += 1
    assert key() != on_primary


def test_a_read_costs_the_replica_two_queries_at_most(held, django_assert_num_queries):
    """Current copy: one query, and the session is not even loaded. Behind: the session (which
    the view reuses), then the two of freshness."""
    repo, _, alice = held
    session = SessionStore()
    session["_auth_user_id"] = str(alice.pk)
    session.create()
    echo = Echo()
    path = f"/{repo.full_name}"

    def read():
        request = rf.get(path)
        request.session = SessionStore(session.session_key)
        return ReplicaRoutingMiddleware(echo)(request)

    with django_assert_num_queries(1):
        assert read()["X-Hostsite-Node"] == "r1"
    _change(repo, age=1)
    with django_assert_num_queries(3):
        read()
    assert echo.calls == 2
