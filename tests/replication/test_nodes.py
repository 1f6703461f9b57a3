"""Nodes register themselves, beat, and are live or down; a replaced disk is noticed."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from replication import heartbeat, nodes
from replication.models import Node, ReplicaState
from repos import services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_cache():
    nodes.forget_live_replicas()
    yield
    nodes.forget_live_replicas()


def test_this_node_registers_with_its_role_url_and_git(settings):
    settings.HOSTSITE_NODE = "r-one"
    settings.HOSTSITE_ROLE = "replica"
    settings.PRIMARY_URL = "http://primary.invalid"
    settings.NODE_URL = "http://r-one:8000"
    node = nodes.this_node(starting=True)
    assert (node.role, node.url) == ("replica", "http://r-one:8000")
    assert node.git_version and node.started_at and node.last_seen_at
    assert [n.name for n in nodes.live_replicas()] == ["r-one"]


def test_live_replicas_leave_out_the_silent_and_the_retired(settings):
    now = timezone.now()
    Node.objects.create(name="fresh", role="replica", last_seen_at=now)
    Node.objects.create(name="silent", role="replica", last_seen_at=now - timezone.timedelta(seconds=60))
    Node.objects.create(name="retired", role="replica", last_seen_at=now, retired_at=now)
    Node.objects.create(name="main", role="primary", last_seen_at=now)
    settings.NODE_DOWN_SECONDS = 30
    assert [n.name for n in nodes.live_replicas()] == ["fresh"]
    assert sorted(n.name for n in nodes.registered_replicas()) == ["fresh", "silent"]


def test_a_replaced_disk_forgets_the_states_but_keeps_confirmations(settings, tmp_path):
    settings.HOSTSITE_NODE = "r-two"
    settings.REPO_ROOT = tmp_path / "root"
    node = nodes.this_node(starting=True)
    assert nodes.check_disk(node)  # a first start: the disk gets its id
    assert not nodes.check_disk(node)
    repo = services.repository_create(owner=UserFactory(), name="kept")
    ReplicaState.objects.create(node=node, repository=repo, generation=3)
    (settings.REPO_ROOT / nodes.DISK_ID_FILE).write_text("someone-else\n")
    assert nodes.check_disk(node)
    assert not ReplicaState.objects.filter(node=node).exists()
    assert Node.objects.get(pk=node.pk).disk_id == nodes.read_disk_id() != "someone-else"


def test_the_heartbeat_registers_then_beats(settings, tmp_path):
    settings.HOSTSITE_NODE = "p-one"
    settings.REPO_ROOT = tmp_path / "root"
    beat = heartbeat.Heartbeat(interval=0.2)
    beat.start()
    try:
        deadline = time.monotonic() + 10
        while not Node.objects.filter(name="p-one").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first = Node.objects.get(name="p-one").last_seen_at
        while Node.objects.get(name="p-one").last_seen_at == first:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        beat.stop()
        beat.join(timeout=5)
    assert (settings.REPO_ROOT / nodes.DISK_ID_FILE).is_file()
