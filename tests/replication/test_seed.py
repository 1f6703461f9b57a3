"""A replica whose disk was wiped forgets what it held, and rebuilds its copy from the
published bundles before fetching the rest from the primary."""

from __future__ import annotations

import shutil

import pytest

from bundles import services as bundle_services
from bundles.models import Bundle, BundleState
from gitcore.git import GitError
from replication import nodes
from replication.models import Node, ReplicaState
from replication.sync import FETCHED, SEED_PREFIX
from tests.bundles.test_s3 import BUCKET, moto_endpoint, s3  # noqa: F401 - fixtures
from tests.replication.support import fsck, refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

UNREACHABLE = "http://127.0.0.1:9"  # the discard port: nothing answers


def test_a_wiped_copy_is_rebuilt_from_bundles_then_fetched(world, make_replica):
    repo = world.repo
    bundle_services.bundles_build(repo=repo)
    assert Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).exists()
    tip = world.owner.git("rev-parse", "HEAD", check=True).stdout.strip()
    # A commit after the bundle: only the primary has it.
    after = world.owner.commit("after the bundle")
    assert world.owner.push("main").returncode == 0

    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    node = Node.objects.get(name=replica.name)
    shutil.rmtree(replica.root)
    replica.root.mkdir()
    with replica.active():
        assert nodes.check_disk(node)  # the disk's id is gone: wiped
    assert not ReplicaState.objects.filter(node=node).exists()

    # With the primary out of reach the copy is seeded all the same, from the bundles alone.
    with pytest.raises(GitError):
        replica.sync(repo.pk, primary_url=UNREACHABLE)
    seeded = replica.refs(repo.pk)
    assert seeded == {f"{SEED_PREFIX}0/heads/main": tip}
    assert replica.has(repo.pk, tip) and not replica.has(repo.pk, after)

    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == refs(repo.disk_path)  # the seed refs pruned
    fsck(replica.path(repo.pk))
    with replica.active():
        assert not nodes.check_disk(node)  # the same disk as at the last check


def test_a_new_copy_is_seeded_from_bundles_on_s3(world, make_replica, s3):  # noqa: F811 - the fixture
    """With the bundles in an S3 bucket (a real S3-protocol server on loopback), the seed
    downloads each and fetches from the file, which is then gone."""
    repo = world.repo
    bundle_services.bundles_build(repo=repo)
    bundle = Bundle.objects.get(repository=repo, state=BundleState.PUBLISHED, flavor="standard")
    assert s3.head_object(Bucket=BUCKET, Key=f"b/{bundle.storage_key}")["ContentLength"] > 0
    tip = world.owner.git("rev-parse", "HEAD", check=True).stdout.strip()

    replica = make_replica()
    with pytest.raises(GitError):
        replica.sync(repo.pk, primary_url=UNREACHABLE)
    assert replica.refs(repo.pk) == {f"{SEED_PREFIX}0/heads/main": tip}
    # The downloaded bundle does not stay beside the copies.
    assert not [p for p in replica.root.rglob("*.bundle")]
    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == refs(repo.disk_path)
    fsck(replica.path(repo.pk))
