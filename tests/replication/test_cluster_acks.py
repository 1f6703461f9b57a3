"""REPLICATION_MIN_ACKS on a live cluster: a push is acknowledged once that many replicas hold
it; with the replicas gone it is acknowledged after the timeout, with a warning."""

from __future__ import annotations

import time

import pytest

from replication.models import ReplicaState
from repos import services
from repos.models import ChangeKind, RepositoryChange
from tests.replication.cluster import Cluster, require_shared_backends, running_cluster
from tests.replication.test_cluster import commit, git, work_tree
from tests.repos.livepush import Account, client_env

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def running(live_env, tmp_path_factory, django_db_blocker):
    with django_db_blocker.unblock():
        require_shared_backends(live_env)
    root = tmp_path_factory.mktemp("acks-cluster")
    with running_cluster(
        live_env, root, REPLICATION_MIN_ACKS="2", REPLICATION_ACK_TIMEOUT_SECONDS="3"
    ) as cluster:
        yield cluster


@pytest.fixture
def cluster(running: Cluster) -> Cluster:
    running.wait_live()
    return running


def held(repo) -> dict[str, int]:
    return dict(ReplicaState.objects.filter(repository_id=repo.pk).values_list("node__name", "generation"))


def test_a_push_returns_once_both_replicas_hold_it(cluster: Cluster, tmp_path):
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="acked")
    env = client_env(tmp_path / "home")
    path = work_tree(tmp_path, env)
    for n in range(3):
        tip = commit(path, env, f"f{n}.txt", f"{n}\n")
        out = git("push", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
        assert "only" not in out.stderr, out.stderr
        # No waiting here: the acknowledgement itself came after both replicas fetched.
        # The push's own change (follow-up work such as maintenance may have added more).
        generation = (
            RepositoryChange.objects.filter(repository=repo, kind=ChangeKind.PUSH)
            .order_by("-generation")
            .first()
        ).generation
        states = held(repo)
        assert all(states.get(node.name, -1) >= generation for node in cluster.replicas), (generation, states)
        assert all(node.refs(repo)["refs/heads/main"] == tip for node in cluster.replicas)


def test_without_replicas_the_push_is_acknowledged_after_the_timeout_with_a_warning(
    cluster: Cluster, tmp_path
):
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="unacked")
    env = client_env(tmp_path / "home")
    path = work_tree(tmp_path, env)
    commit(path, env, "a.txt", "a\n")
    for node in cluster.replicas:
        node.stop_worker()
    try:
        start = time.monotonic()
        out = git("push", alice.url(cluster.primary.host, repo), "main", cwd=path, env=env)
        took = time.monotonic() - start
        # Durable on the primary: acknowledged, and told how many replicas hold it.
        assert "main -> main" in out.stderr
        assert "only 0 of 2 replicas hold this push after 3 s" in out.stderr
        assert took >= 3
        assert cluster.primary.refs(repo)["refs/heads/main"]
    finally:
        for node in cluster.replicas:
            node.start_worker()
    cluster.wait_replicated(repo)  # back, they catch up
