"""A replica follows the primary (the live server) by fetching from its internal endpoint."""

from __future__ import annotations

import pytest

from replication.models import ReplicaState
from replication.sync import CURRENT, FETCHED
from repos.git import run_git
from tests.replication.support import fsck, record, refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_every_ref_is_copied_and_the_copy_is_sound(world, make_replica, jobs):
    repo = world.repo
    olga = world.add("olga", "maintainer")
    olga.commit("olga's work", "w.txt")
    assert olga.push("HEAD:refs/users/olga/feature").returncode == 0
    head = world.owner.git("rev-parse", "HEAD", check=True).stdout.strip()
    # Namespaces no client is shown: they are copied all the same.
    for ref in ("refs/takedown/olga/old", "refs/archive/olga/1/feature", "refs/imported/x"):
        run_git(["update-ref", ref, head], repo=repo.disk_path)
    record(repo.pk)
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == refs(repo.disk_path)
    assert "refs/users/olga/feature" in replica.refs(repo.pk)
    fsck(replica.path(repo.pk))
    head_ref = run_git(["symbolic-ref", "HEAD"], repo=replica.path(repo.pk)).text.strip()
    assert head_ref == f"refs/heads/{repo.default_branch}"
    repo.refresh_from_db()
    state = ReplicaState.objects.get(node__name=replica.name, repository=repo)
    assert state.generation == repo.generation and state.error == ""
    assert replica.sync(repo.pk) == CURRENT
