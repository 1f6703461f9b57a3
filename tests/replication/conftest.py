from __future__ import annotations

import uuid

import pytest

from hostsite.queues import replica_queue
from replication import nodes
from tests import live
from tests.replication.support import Replica


@pytest.fixture
def jobs(monkeypatch):
    """Task messages recorded, not sent: (task name, args, queue)."""
    from celery.app.task import Task

    sent: list[tuple[str, tuple, str | None]] = []

    def apply_async(self, args=None, kwargs=None, **options):
        sent.append((self.name, tuple(args or ()), options.get("queue")))

    monkeypatch.setattr(Task, "apply_async", apply_async)
    return sent


@pytest.fixture
def make_replica(tmp_path, live_server_url):
    made = []

    def make(name: str | None = None) -> Replica:
        # Unique: queues and node rows of parallel sessions must not meet.
        replica = Replica(
            name or f"r{uuid.uuid4().hex[:8]}", tmp_path / f"replica-{len(made)}", live_server_url
        )
        replica.register()
        made.append(replica)
        return replica

    yield make
    nodes.forget_live_replicas()
    live.empty_queues(*(replica_queue(replica.name) for replica in made), delete=True)
