"""A real replica worker consuming its own queue, and a primary whose pushes wait for it
(REPLICATION_MIN_ACKS=1): acknowledged once the replica holds the push, or after
REPLICATION_ACK_TIMEOUT_SECONDS with a warning the client sees."""

from __future__ import annotations

import time
import uuid

import pytest

from hostsite.queues import replica_queue
from replication.models import Node, ReplicaState
from tests import live
from tests.pushers import World
from tests.replication.support import refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

ACK_TIMEOUT = 2


@pytest.fixture
def primary(live_env, tmp_path, live_web):
    """A second primary web server, over the same database and disk, that waits for one ack."""
    logs = tmp_path / "primary-logs"
    logs.mkdir()
    env = {**live_env, "REPLICATION_MIN_ACKS": "1", "REPLICATION_ACK_TIMEOUT_SECONDS": str(ACK_TIMEOUT)}
    port = live.free_port()
    web = live.start_web(env, port, logs)
    web.url = f"http://127.0.0.1:{port}"
    yield web
    web.stop()


def _start_replica_worker(live_env, tmp_path, primary_url: str):
    name = f"r{uuid.uuid4().hex[:8]}"
    root = tmp_path / "replica-root"
    logs = tmp_path / "replica-logs"
    logs.mkdir()
    env = {
        **live_env,
        "HOSTSITE_ROLE": "replica",
        "HOSTSITE_NODE": name,
        "PRIMARY_URL": primary_url,
        "REPO_ROOT": str(root),
        "NODE_HEARTBEAT_SECONDS": "1",
    }
    return name, root, live.start_worker(env, logs, queue=replica_queue(name))


def _push(world: World, message: str) -> tuple[float, str]:
    world.owner.commit(message)
    started = time.monotonic()
    result = world.owner.push("main")
    assert result.returncode == 0, result.stderr
    return time.monotonic() - started, result.stderr


def test_pushes_wait_for_a_replica_and_time_out_with_a_warning_without_one(
    primary, live_env, tmp_path, git_home
):
    world = World(primary.url, tmp_path, git_home)
    repo = world.repo
    took, said = _push(world, "no replica yet")
    assert f"only 0 of 1 replicas hold this push after {ACK_TIMEOUT} s" in said
    assert took >= ACK_TIMEOUT

    name, root, worker = _start_replica_worker(live_env, tmp_path, primary.url)
    try:
        deadline = time.monotonic() + 30
        while not Node.objects.filter(name=name, last_seen_at__isnull=False).exists():
            assert time.monotonic() < deadline, worker.log()
            time.sleep(0.1)
        # Its start-up sweep brings the repository in, through its own queue.
        while not ReplicaState.objects.filter(node__name=name, repository=repo).exists():
            assert time.monotonic() < deadline, worker.log()
            time.sleep(0.1)
        took, said = _push(world, "with a replica")
        assert "replicas hold this push" not in said
        repo.refresh_from_db()
        # Acknowledged only once the replica held it.
        assert ReplicaState.objects.get(node__name=name, repository=repo).generation >= repo.generation
        copy = root / f"{repo.pk % 256:02x}" / f"{repo.pk}.git"
        assert refs(copy) == refs(repo.disk_path)
    finally:
        worker.stop()
