"""Contributors' work in a deleted repository (issue 8): who is told, and the exported bundle,
built by a real Celery worker, carrying every one of the user's refs."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from notifications.models import Notification
from repos import lifecycle, services
from repos.models import Repository
from tests.factories import UserFactory
from tests.gitutil import git
from tests.support.wait import wait_until
from workspaces import exports
from workspaces.models import Workspace, WorkspaceExport

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope='write')[1]}")
    return client


@pytest.fixture
def contributors(world):
    alice = world.add("alice")
    alice.commit("alice 1")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    alice.commit("alice 2", name="other.txt")
    assert alice.push("HEAD:refs/users/alice/topic/deep").returncode == 0
    # Merged work: a ref at a commit main already has.
    assert alice.push(f"{world.base_sha}:refs/users/alice/landed").returncode == 0
    bob = world.add("bob")
    assert bob.push(f"{world.base_sha}:refs/users/bob/done").returncode == 0
    return alice, bob


def test_unmerged_refs_in_one_for_each_ref(world, contributors):
    found = exports.unmerged_workspace_refs(Repository.objects.get(pk=world.repo.pk))
    assert found == {"alice": ["refs/users/alice/feature", "refs/users/alice/topic/deep"]}


def test_delete_notifies_contributors_and_their_bundle_has_all_their_refs(
    celery_worker_process, world, contributors, tmp_path
):
    alice, bob = contributors
    client = api(alice.user)
    lifecycle.repository_soft_delete(repo=world.repo, acting_user=world.owner.user)

    # The worker finds alice's unmerged work; bob's is all merged, the owner has none.
    note = wait_until(
        lambda: Notification.objects.filter(user=alice.user, kind="repository_deleted").first(),
        timeout=60,
        what="alice notified of the deletion",
        alive=celery_worker_process,
    )
    assert "owner/project" in note.text and "2 unmerged refs" in note.text
    assert note.url == "/settings/workspace-exports" and note.repository_id == world.repo.pk
    assert not Notification.objects.filter(
        user__in=[bob.user, world.owner.user], kind="repository_deleted"
    ).exists()

    # bob has refs there too, so he may export; a stranger may not learn the repository exists.
    assert (
        api(UserFactory(username="stranger"))
        .post("/api/v1/user/workspace-exports", {"repository_id": world.repo.pk}, format="json")
        .status_code
        == 404
    )
    response = client.post("/api/v1/user/workspace-exports", {"repository_id": world.repo.pk}, format="json")
    assert response.status_code == 202, response.content
    export_id = response.json()["id"]
    body = wait_until(
        lambda: (
            (b := client.get(f"/api/v1/user/workspace-exports/{export_id}").json())["state"] != "pending"
            and b
        ),
        timeout=60,
        what="the export no longer pending",
        alive=celery_worker_process,
    )
    assert body["state"] == "ready", body
    expected = git(
        world.env,
        "--git-dir",
        str(world.repo.disk_path),
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/users/alice/",
    ).stdout
    assert body["ref_count"] == len(expected.splitlines()), (body, expected)
    assert body["download_url"].endswith(f"/api/v1/user/workspace-exports/{export_id}/download")

    # Only alice downloads it.
    assert api(bob.user).get(f"/api/v1/user/workspace-exports/{export_id}/download").status_code == 404
    response = client.get(f"/api/v1/user/workspace-exports/{export_id}/download")
    assert response.status_code == 200
    bundle = tmp_path / "alice.bundle"
    bundle.write_bytes(b"".join(response.streaming_content))

    target = tmp_path / "restored.git"
    git(world.env, "init", "--bare", "--quiet", str(target))
    git(world.env, "--git-dir", str(target), "fetch", "--quiet", str(bundle), "refs/*:refs/*")
    got = git(world.env, "--git-dir", str(target), "for-each-ref", "--format=%(refname) %(objectname)").stdout
    assert got == expected
    assert {"refs/users/alice/feature", "refs/users/alice/topic/deep"} <= {
        line.split()[0] for line in got.splitlines()
    }
    git(world.env, "--git-dir", str(target), "fsck", "--no-progress")

    # The page lists it with its download link (a repository where the worker, following the
    # pushes, wrote alice's Workspace row); the purge takes the file away with the repository.
    wait_until(
        lambda: Workspace.objects.filter(repository=world.repo, user=alice.user).exists(),
        timeout=60,
        what="the worker writing alice's Workspace row",
    )
    web = world_client(alice.user)
    page = web.get("/settings/workspace-exports").content.decode()
    assert "owner/project" in page and f"/settings/workspace-exports/download/{export_id}" in page
    assert web.get(f"/settings/workspace-exports/download/{export_id}").status_code == 200
    path = exports.export_file(WorkspaceExport.objects.get(pk=export_id))
    assert path.is_file()
    Repository.objects.filter(pk=world.repo.pk).update(
        deleted_at=timezone.now() - timedelta(days=settings.REPOSITORY_DELETE_RETENTION_DAYS + 1)
    )
    assert lifecycle.repository_purge(repo_id=world.repo.pk)
    assert not path.exists() and not WorkspaceExport.objects.filter(pk=export_id).exists()
    # The notification outlives the repository.
    assert Notification.objects.filter(pk=note.pk).exists()


def world_client(user):
    client = Client()
    client.force_login(user)
    return client
