"""/status, /status.json and the figures behind them (replication.status)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from replication import status
from replication.models import ChangeConfirmation, Node, NodeRole, ReplicaState
from repos import services
from repos.models import ChangeKind, Repository, RepositoryChange, TokenScope
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def add_repository(owner, name: str, changes: int, *, age: float = 0.0) -> Repository:
    """A repository row and its log (no disk: the figures read the database only); its first
    change `age` seconds old and each later one a second younger."""
    repo = Repository.objects.create(owner=owner, name=name, generation=changes)
    now = timezone.now()
    RepositoryChange.objects.bulk_create(
        RepositoryChange(repository=repo, generation=g, kind=ChangeKind.PUSH) for g in range(1, changes + 1)
    )
    for g in range(1, changes + 1):
        RepositoryChange.objects.filter(repository=repo, generation=g).update(
            created_at=now - timedelta(seconds=age - (g - 1))
        )
    return repo


def node(name: str, role=NodeRole.REPLICA, *, seen: float | None = 0.0, retired=False) -> Node:
    now = timezone.now()
    return Node.objects.create(
        name=name,
        role=role,
        url=f"http://{name}:8000",
        git_version="2.47.0",
        started_at=now - timedelta(hours=1),
        last_seen_at=None if seen is None else now - timedelta(seconds=seen),
        retired_at=now if retired else None,
    )


@pytest.fixture
def site():
    olga = UserFactory(username="olga")
    p1 = node("p1", NodeRole.PRIMARY)
    r1 = node("r1")
    r2 = node("r2", seen=600)  # down
    r3 = node("r3", retired=True)
    current = add_repository(olga, "current", 3, age=500)
    behind = add_repository(olga, "behind", 2, age=100)  # r1 lacks generation 2: 99 s old
    missing = add_repository(olga, "missing", 1, age=50)
    empty = add_repository(olga, "empty", 0)
    ReplicaState.objects.create(node=r1, repository=current, generation=3, synced_at=timezone.now())
    ReplicaState.objects.create(
        node=r1, repository=behind, generation=1, error="fetch: connection refused", failures=4
    )
    takedown = RepositoryChange.objects.create(
        repository=current, generation=4, kind=ChangeKind.TAKEDOWN, needs_confirmation=True
    )
    Repository.objects.filter(pk=current.pk).update(generation=4)
    ChangeConfirmation.objects.create(change=takedown, node=r1)
    # A purged repository's last change outlives its row: shown by id.
    RepositoryChange.objects.create(
        repository_id=987654, generation=9, kind=ChangeKind.PURGE_REPOSITORY, needs_confirmation=True
    )
    done = RepositoryChange.objects.create(
        repository=missing, generation=2, kind=ChangeKind.PURGE, needs_confirmation=True
    )
    done.completed_at = timezone.now()
    done.save()
    Repository.objects.filter(pk=missing.pk).update(generation=2)
    return {"p1": p1, "r1": r1, "r2": r2, "r3": r3, "repos": (current, behind, missing, empty)}


def test_figures(site):
    result = status.site_status()
    nodes = {n.name: n for n in result.nodes}
    assert [n.name for n in result.nodes] == ["p1", "r1", "r2", "r3"]
    assert nodes["p1"].up and nodes["p1"].replica is None
    assert nodes["r1"].up and not nodes["r2"].up and nodes["r3"].retired
    r1 = nodes["r1"].replica
    # current: held 3, now at 4 (the take-down) -> behind; behind: held 1 of 2.
    assert (r1.current, r1.behind, r1.missing) == (0, 2, 2)
    # The oldest change r1 lacks: "missing"'s first (50 s) < "behind"'s second (99 s) < ...
    # "current"'s take-down was created just now; "missing"'s generation 1 is 50 s old.
    assert r1.lag_seconds == pytest.approx(99, abs=3)
    assert r1.errors_count == 1
    assert r1.errors[0].repository == "olga/behind" and "connection refused" in r1.errors[0].error
    r2 = nodes["r2"].replica
    assert (r2.current, r2.behind, r2.missing) == (0, 0, 4)
    assert r2.lag_seconds == pytest.approx(500, abs=3)  # "current"'s first change
    assert result.pending_count == 2
    takedown, purged = result.pending
    assert takedown.repository == "olga/current" and takedown.kind == "takedown"
    assert takedown.awaiting == ["r2"], "r1 confirmed, r3 is retired"
    assert purged.repository == "#987654 (purged)" and purged.awaiting == ["r1", "r2"]


def test_a_replica_that_holds_everything_has_no_lag(site):
    r1 = site["r1"]
    for repo in Repository.objects.all():
        ReplicaState.objects.update_or_create(
            node=r1, repository=repo, defaults={"generation": repo.generation, "error": ""}
        )
    figures = status.replica_figures(r1)
    assert (figures.current, figures.behind, figures.missing, figures.lag_seconds) == (4, 0, 0, None)
    assert figures.errors == [] and figures.errors_count == 0


def staff_client(username="sam") -> Client:
    client = Client()
    client.force_login(UserFactory(username=username, is_staff=True))
    return client


def test_page_for_staff(site):
    response = staff_client().get("/status")
    assert response.status_code == 200
    page = response.content.decode()
    for text in ("r1", "r2", "olga/behind", "connection refused", "#987654 (purged)", "retired", "down"):
        assert text in page, text
    assert response["Cache-Control"].startswith("max-age=0")


def test_json_for_staff_session_and_staff_token(site):
    data = staff_client().get("/status.json").json()
    r1 = next(n for n in data["nodes"] if n["name"] == "r1")
    assert r1["replica"]["behind"] == 2 and r1["up"] is True
    assert data["pending_count"] == 2 and data["pending"][0]["awaiting"] == ["r2"]
    assert isinstance(data["generated_at"], str)
    staff = UserFactory(username="ops", is_staff=True)
    _token, secret = services.token_create(user=staff, name="monitor", scope=TokenScope.READ)
    response = Client().get("/status.json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200 and response.json()["repositories"] == 4


@pytest.mark.parametrize("path", ["/status", "/status.json"])
def test_everyone_else_gets_404(site, path):
    user = UserFactory(username="otto")
    signed_in = Client()
    signed_in.force_login(user)
    _t, user_token = services.token_create(user=user, name="t", scope=TokenScope.WRITE)
    staff = UserFactory(username="ops", is_staff=True)
    _t, status_token = services.token_create(user=staff, name="ci", scope=TokenScope.STATUS)
    inactive = UserFactory(username="gone", is_staff=True, is_active=False)
    gone = Client()
    gone.force_login(inactive)
    answers = [
        Client().get(path),
        signed_in.get(path),
        gone.get(path),
        Client().get(path, HTTP_AUTHORIZATION=f"Bearer {user_token}"),
        Client().get(path, HTTP_AUTHORIZATION=f"Bearer {status_token}"),
        Client().get(path, HTTP_AUTHORIZATION="Bearer hst_" + "x" * 40),
        Client().get(path, HTTP_AUTHORIZATION="Basic !!!not-base64"),
    ]
    assert [r.status_code for r in answers] == [404] * len(answers)
    # Names only the status shows (a 404 page's random CSRF token may well hold "r1").
    for response in answers:
        for shown in (b"olga/behind", b"connection refused", b"987654", b"http://r1:8000"):
            assert shown not in response.content


def test_only_reads(site):
    assert staff_client().post("/status").status_code == 405


def test_bounded_queries_with_thousands_of_repositories(site):
    """The number of queries does not grow with the repositories, and each replica's figures
    are right over a few thousand of them."""

    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            status.site_status()
        return len(queries)

    few = count_queries()
    olga = site["repos"][0].owner
    repos = Repository.objects.bulk_create(
        Repository(owner=olga, name=f"bulk{i}", generation=2) for i in range(3000)
    )
    RepositoryChange.objects.bulk_create(
        RepositoryChange(repository=repo, generation=g, kind=ChangeKind.PUSH)
        for repo in repos
        for g in (1, 2)
    )
    ReplicaState.objects.bulk_create(
        ReplicaState(node=site["r1"], repository=repo, generation=2 if i % 3 else 1)
        for i, repo in enumerate(repos)
    )
    ReplicaState.objects.bulk_create(
        ReplicaState(node=site["r2"], repository=repo, generation=1, error="boom") for repo in repos[:100]
    )
    assert count_queries() == few
    result = status.site_status()
    nodes = {n.name: n.replica for n in result.nodes}
    assert (nodes["r1"].current, nodes["r1"].behind, nodes["r1"].missing) == (2000, 1002, 2)
    assert nodes["r2"].errors_count == 100 and len(nodes["r2"].errors) == status.ERRORS_SHOWN
    assert (nodes["r2"].behind, nodes["r2"].missing) == (100, 2904)
    assert nodes["r1"].lag_seconds is not None and nodes["r1"].lag_seconds < 200
