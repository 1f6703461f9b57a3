"""Merged-ref cleanup (workspaces.cleanup), driven by real pushes through the live server: a
contributor pushes to their workspace, a maintainer lands the work on main in each of the
ways people do, and cleanup runs as the Celery task would (one end-to-end test runs it in a
real worker)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from repos.errors import Conflict, Forbidden
from repos.models import Push
from tests.support.wait import wait_until
from workspaces import cleanup
from workspaces.models import ArchivedRef, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def last_push(world) -> Push:
    return Push.objects.filter(repository=world.repo).order_by("-pk").first()


def run_cleanup(world) -> list[ArchivedRef]:
    """Clean up after the last push, as the task does; what was archived for that push. A
    Celery worker left running by an earlier test may have done it first: both take the
    repository's lock and compare-and-delete, so either way each ref is archived once."""
    push = last_push(world)
    cleanup.cleanup_after_push(push)
    return list(ArchivedRef.objects.filter(repository=world.repo, push=push).order_by("pk"))


@pytest.fixture
def alice_work(world):
    """alice's two commits in refs/users/alice/feature, branched from main; main then moves."""
    alice = world.add("alice")
    first = alice.commit("alice one", name="a.txt")
    second = alice.commit("alice two", name="b.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    owner = world.owner
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/feature", check=True)
    return alice, first, second


def land(world, *git_args, push="main"):
    owner = world.owner
    for args in git_args:
        owner.git(*args, check=True)
    result = owner.push(push)
    assert result.returncode == 0, result.stderr


def assert_archived(world, ref, sha, how):
    refs = world.refs()
    assert ref not in refs
    row = ArchivedRef.objects.get(repository=world.repo, ref=ref)
    assert (row.sha, row.how, row.username, row.state) == (sha, how, "alice", "archived")
    assert refs[row.archive_ref] == sha  # still reachable, hidden
    push = last_push(world)
    assert row.reason.endswith(f"main in push #{push.pk}") and row.deleted_by == world.owner.user
    assert row.expires_at > timezone.now() + timedelta(days=29)
    return row


def test_merge_commit(world, alice_work):
    _alice, _first, second = alice_work
    world.owner.commit("main moves", name="m.txt")
    land(world, ("merge", "--no-ff", "--quiet", "-m", "merge alice", "FETCH_HEAD"))
    assert [r.ref for r in run_cleanup(world)] == ["refs/users/alice/feature"]
    row = assert_archived(world, "refs/users/alice/feature", second, "merged")
    assert row.reason == f"merged into main in push #{last_push(world).pk}"


def test_fast_forward(world, alice_work):
    _alice, _first, second = alice_work
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    run_cleanup(world)
    assert_archived(world, "refs/users/alice/feature", second, "merged")


def test_rebase(world, alice_work):
    _alice, _first, second = alice_work
    world.owner.commit("main moves", name="m.txt")
    land(world, ("cherry-pick", "FETCH_HEAD~1", "FETCH_HEAD"))
    run_cleanup(world)
    row = assert_archived(world, "refs/users/alice/feature", second, "rebased")
    assert row.reason.startswith("rebased onto main")


def test_squash(world, alice_work):
    _alice, _first, second = alice_work
    world.owner.commit("main moves", name="m.txt")
    land(
        world, ("merge", "--squash", "--quiet", "FETCH_HEAD"), ("commit", "--quiet", "-m", "alice's feature")
    )
    run_cleanup(world)
    assert_archived(world, "refs/users/alice/feature", second, "squashed")


def test_partly_cherry_picked_ref_stays(world, alice_work):
    world.owner.commit("main moves", name="m.txt")
    land(world, ("cherry-pick", "FETCH_HEAD~1"))  # only the first of alice's two commits
    assert run_cleanup(world) == []
    assert "refs/users/alice/feature" in world.refs()
    assert not ArchivedRef.objects.exists()


def test_start_point_already_on_main_stays(world):
    alice = world.add("alice")
    assert alice.push("HEAD:refs/users/alice/start").returncode == 0  # main's tip, nothing new
    world.owner.commit("main moves")
    land(world)
    assert run_cleanup(world) == []
    assert "refs/users/alice/start" in world.refs()


def test_ref_moved_between_check_and_delete_stays(world, alice_work):
    # Only this test's own calls may clean up (not a worker running the task meanwhile).
    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    alice, _first, second = alice_work
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    push = last_push(world)
    landed = cleanup.find_landed(world.repo, "main", push.ref_updates.get().old, second)
    assert [item.ref for item in landed] == ["refs/users/alice/feature"]
    newer = alice.commit("alice three")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    assert cleanup.archive_landed(world.repo, "main", landed, push=push) == []
    assert world.refs()["refs/users/alice/feature"] == newer
    assert not ArchivedRef.objects.exists()


def test_setting_off_keeps_refs(world, alice_work):
    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    assert run_cleanup(world) == []
    assert "refs/users/alice/feature" in world.refs()


def test_archive_is_hidden_and_restore_brings_the_ref_back(world, alice_work):
    alice, _first, second = alice_work
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    (row,) = run_cleanup(world)
    for who in (alice, world.owner):  # nobody is advertised refs/archive/, not even the admin
        listed = who.git("ls-remote", who.remote, check=True).stdout
        assert "refs/archive/" not in listed and second in listed  # main has the commit itself
        assert who.git("fetch", who.remote, row.archive_ref).returncode != 0
    bob = world.add("bob")
    with pytest.raises(Forbidden):
        cleanup.restore(row, user=bob.user)
    assert cleanup.restore(row, user=alice.user) == "refs/users/alice/feature"
    refs = world.refs()
    assert refs["refs/users/alice/feature"] == second and row.archive_ref not in refs
    row.refresh_from_db()
    assert row.state == "restored" and row.restored_by == alice.user
    with pytest.raises(Conflict):
        cleanup.restore(row, user=alice.user)


def test_restore_never_overwrites_newer_work(world, alice_work):
    alice, _first, second = alice_work
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    (row,) = run_cleanup(world)
    newer = alice.commit("new work under the same name")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    with pytest.raises(Conflict, match="another name"):
        cleanup.restore(row, user=alice.user)
    assert world.refs()["refs/users/alice/feature"] == newer
    assert cleanup.restore(row, user=alice.user, name="feature-old") == "refs/users/alice/feature-old"
    assert world.refs()["refs/users/alice/feature-old"] == second


def test_expiry_after_the_retention_period(world, alice_work):
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    (row,) = run_cleanup(world)
    assert cleanup.expire_due() == 0  # not yet
    ArchivedRef.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert cleanup.expire_due() == 1
    assert row.archive_ref not in world.refs()
    row.refresh_from_db()
    assert row.state == "expired"


def test_owner_sees_and_restores_from_the_page_and_the_api(world, alice_work):
    alice, _first, second = alice_work
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    (row,) = run_cleanup(world)
    client = Client()
    client.force_login(alice.user)
    page = client.get("/owner/project/workspaces/alice").content.decode()
    assert "Deleted refs" in page and "merged into main" in page and f"/archived/{row.pk}/restore" in page
    # Someone else sees the history but no restore button.
    other = Client()
    other.force_login(world.add("bob").user)
    assert f"/archived/{row.pk}/restore" not in other.get("/owner/project/workspaces/alice").content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {alice.token}")
    listed = api.get("/api/v1/repos/owner/project/workspaces/alice/archived").json()
    assert [(r["ref"], r["sha"], r["state"]) for r in listed] == [
        ("refs/users/alice/feature", second, "archived")
    ]
    response = api.post(
        f"/api/v1/repos/owner/project/workspaces/alice/archived/{row.pk}/restore", {}, format="json"
    )
    assert response.status_code == 200 and response.json()["ref"] == "refs/users/alice/feature"
    assert world.refs()["refs/users/alice/feature"] == second
    again = api.post(
        f"/api/v1/repos/owner/project/workspaces/alice/archived/{row.pk}/restore", {}, format="json"
    )
    assert again.status_code == 409


def test_the_task_runs_after_a_push_in_a_real_worker(world, alice_work, celery_worker_process):
    land(world, ("merge", "--ff-only", "--quiet", "FETCH_HEAD"))
    # The worker deletes the ref in git first and records the ArchivedRef row just after, so
    # wait for both: the ref gone from git and its record committed.
    wait_until(
        lambda: (
            "refs/users/alice/feature" not in world.refs()
            and ArchivedRef.objects.filter(ref="refs/users/alice/feature").exists()
        ),
        timeout=60,
        what="cleanup to archive refs/users/alice/feature and record it",
        alive=celery_worker_process,
    )
    assert ArchivedRef.objects.get(ref="refs/users/alice/feature").how == "merged"
