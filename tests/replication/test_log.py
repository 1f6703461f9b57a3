"""What the log asks of replicas beyond refs: purges confirmed by every replica, a purged
repository removed, and what the dispatch sends (and to whom)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from replication import catchup, nodes
from replication.models import ChangeConfirmation, Node, ReplicaState
from replication.sync import CURRENT, FETCHED, REMOVED
from repos import lifecycle
from repos.models import ChangeKind, RepositoryChange
from tests.factories import UserFactory
from tests.replication.support import has, record, refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _purge_change(repo):
    return (
        RepositoryChange.objects.filter(repository_id=repo.pk, kind=ChangeKind.PURGE).order_by("-id").first()
    )


def test_a_purge_is_complete_once_both_replicas_removed_the_objects(world, make_replica, jobs):
    from workspaces.moderation import do_purge_workspace

    repo = world.repo
    olga = world.add("olga", "maintainer")
    (olga.work / "secret.txt").write_text("a secret that must go everywhere\n")
    olga.git("add", "secret.txt", check=True)
    olga.git("commit", "-qm", "secret", check=True)
    blob = olga.git("rev-parse", "HEAD:secret.txt", check=True).stdout.strip()
    assert olga.push("HEAD:refs/users/olga/secret").returncode == 0
    first, second = make_replica(), make_replica()
    assert first.sync(repo.pk) == FETCHED and second.sync(repo.pk) == FETCHED
    assert first.has(repo.pk, blob) and second.has(repo.pk, blob)

    staff = UserFactory(username="mod", is_staff=True)
    do_purge_workspace(repo=repo, user=olga.user, acting_user=staff, reason="leaked credentials")
    if _purge_change(repo) is None:  # the purge's own log row comes with the moderation log work
        record(repo.pk, ChangeKind.PURGE, actor=staff)
    change = _purge_change(repo)
    assert change.needs_confirmation and change.completed_at is None
    sent = {queue for name, args, queue in jobs if args == (repo.pk, change.generation)}
    assert sent == {f"replica-{first.name}", f"replica-{second.name}"}

    assert first.sync(repo.pk, change.generation) == FETCHED
    assert not first.has(repo.pk, blob)
    assert "refs/users/olga/secret" not in first.refs(repo.pk)
    change.refresh_from_db()
    assert change.completed_at is None  # the second replica still holds it
    assert second.has(repo.pk, blob)

    assert second.sync(repo.pk, change.generation) == FETCHED
    assert not second.has(repo.pk, blob)
    change.refresh_from_db()
    assert change.completed_at is not None
    assert set(ChangeConfirmation.objects.filter(change=change).values_list("node__name", flat=True)) == {
        first.name,
        second.name,
    }
    assert not has(repo.disk_path, blob)


def test_a_confirmed_change_is_complete_at_once_without_replicas(world, jobs):
    Node.objects.filter(role="replica").update(retired_at=timezone.now())
    nodes.forget_live_replicas()
    change = record(world.repo.pk, ChangeKind.TAKEDOWN)
    change.refresh_from_db()
    assert change.completed_at is not None
    assert jobs == []


def test_a_purged_repository_s_copy_is_removed(world, make_replica, jobs):
    repo = world.repo
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    copy = replica.path(repo.pk)
    assert copy.exists()
    repo_id = repo.pk
    lifecycle.repository_soft_delete(repo=repo, acting_user=repo.owner)
    # A soft-deleted repository is still replicated: an undelete must find it.
    assert replica.sync(repo_id) in (FETCHED, CURRENT) and copy.exists()
    type(repo).objects.filter(pk=repo_id).update(deleted_at=timezone.now() - timezone.timedelta(days=3650))
    assert lifecycle.repository_purge(repo_id=repo_id)
    change = RepositoryChange.objects.filter(repository_id=repo_id).order_by("-generation").first()
    if change is None or change.kind != ChangeKind.PURGE_REPOSITORY:
        # The purge's own log row comes with the lifecycle's log work.
        change = record(repo_id, ChangeKind.PURGE_REPOSITORY)
    assert replica.sync(repo_id, change.generation) == REMOVED
    assert not copy.exists()
    assert not ReplicaState.objects.filter(node__name=replica.name, repository_id=repo_id).exists()
    change.refresh_from_db()
    assert change.completed_at is not None


def test_a_down_replica_gets_no_job_and_catches_up_by_the_sweep(world, make_replica, jobs):
    repo = world.repo
    live, down = make_replica(), make_replica()
    assert live.sync(repo.pk) == FETCHED and down.sync(repo.pk) == FETCHED
    Node.objects.filter(name=down.name).update(last_seen_at=timezone.now() - timezone.timedelta(minutes=5))
    nodes.forget_live_replicas()
    jobs.clear()
    change = record(repo.pk)
    assert {queue for _name, _args, queue in jobs} == {f"replica-{live.name}"}

    jobs.clear()
    with down.active():
        assert catchup.catch_up() == 1
    assert jobs == [
        ("replication.tasks.sync_repository", (repo.pk, change.generation), f"replica-{down.name}")
    ]
    assert down.sync(repo.pk, change.generation) == FETCHED
    assert down.refs(repo.pk) == refs(repo.disk_path)
    jobs.clear()
    with down.active():
        assert catchup.catch_up() == 0
    assert down.sync(repo.pk, change.generation) == CURRENT


def test_the_sweep_resends_a_confirmation_a_replica_owes(world, make_replica, jobs):
    repo = world.repo
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    change = record(repo.pk, ChangeKind.TAKEDOWN)
    # The state says the copy holds it, but no confirmation was written (a lost job, say).
    ReplicaState.objects.filter(node__name=replica.name, repository=repo).update(generation=change.generation)
    jobs.clear()
    with replica.active():
        assert catchup.catch_up() == 1
    assert replica.sync(repo.pk, change.generation) == FETCHED
    change.refresh_from_db()
    assert change.completed_at is not None
