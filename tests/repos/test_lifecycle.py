"""Soft delete, restore, purge, rename and transfer (issue 8), through pages, the API and the
services. Git clients against a live server are in test_lifecycle_live.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from bundles import services as bundle_services
from bundles.models import Bundle, BundleState
from repos import lifecycle, services
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import Membership, Repository, RepositoryRedirect, Role, Visibility
from repos.tasks import purge_deleted_repositories
from tests.bundles.conftest import add_commits
from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    owner = UserFactory(username="owner")
    return {
        "owner": owner,
        "member": UserFactory(username="member"),
        "stranger": UserFactory(username="stranger"),
        "staff": UserFactory(username="staffer", is_staff=True),
    }


@pytest.fixture
def repo(people):
    repo = RepositoryFactory(owner=people["owner"], name="proj")
    services.membership_set(repo=repo, user=people["member"], role=Role.READER)
    return repo


def api(user=None, scope="write") -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")
    return client


def page_status(client, user, path) -> int:
    client.logout()
    if user is not None:
        client.force_login(user)
    return client.get(path).status_code


def backdate(repo, days):
    Repository.objects.filter(pk=repo.pk).update(deleted_at=timezone.now() - timedelta(days=days))


def test_delete_page_needs_the_typed_name_then_hides_everywhere_but_for_staff(client, people, repo):
    client.force_login(people["owner"])
    response = client.post("/owner/proj/settings/delete", {"confirm": "proj"})
    assert response.status_code == 302
    repo.refresh_from_db()
    assert repo.deleted_at is None
    response = client.post("/owner/proj/settings/delete", {"confirm": "owner/proj"})
    assert response.status_code == 302 and response["Location"] == "/"
    repo.refresh_from_db()
    assert repo.deleted_at is not None and repo.deleted_by == people["owner"]

    for path in ("/owner/proj", "/owner/proj/commits", "/owner/proj/json-pushes", "/owner/proj/work"):
        for who in (None, "owner", "member", "stranger"):
            assert page_status(client, people.get(who), path) == 404, (path, who)
    assert page_status(client, people["owner"], "/owner/proj/settings") == 404
    assert page_status(client, people["staff"], "/owner/proj") == 200
    client.force_login(people["staff"])
    assert b'id="deleted-notice"' in client.get("/owner/proj").content
    # Listings forget it, for everyone.
    for who in (None, "owner", "staff"):
        client.logout()
        if who:
            client.force_login(people[who])
        assert b"/owner/proj" not in client.get("/").content
        assert b"/owner/proj" not in client.get("/owner").content
    assert "proj" not in [r["name"] for r in api(people["staff"]).get("/api/v1/repos").json()["results"]]


def test_api_delete_then_404_then_staff_restore(people, repo):
    assert api(people["member"]).delete("/api/v1/repos/owner/proj").status_code == 403
    assert api(people["owner"], scope="read").delete("/api/v1/repos/owner/proj").status_code == 403
    assert api(people["owner"]).delete("/api/v1/repos/owner/proj").status_code == 204
    for who in (None, "owner", "member", "stranger"):
        client = api(people.get(who))
        assert client.get("/api/v1/repos/owner/proj").status_code == 404, who
        assert client.get("/api/v1/repos/owner/proj/pushes").status_code == 404, who
    staff = api(people["staff"])
    assert staff.get("/api/v1/repos/owner/proj").json()["deleted_at"]
    listed = staff.get("/api/v1/repos?deleted=1").json()["results"]
    assert [r["full_name"] for r in listed] == ["owner/proj"]
    # Restoring is for staff: the owner no longer sees the repository at all.
    assert api(people["owner"]).post("/api/v1/repos/owner/proj/restore").status_code == 404
    response = staff.post("/api/v1/repos/owner/proj/restore")
    assert response.status_code == 200 and response.json()["deleted_at"] is None
    assert api(None).get("/api/v1/repos/owner/proj").status_code == 200
    assert api(people["owner"]).get("/api/v1/repos/owner/proj").status_code == 200


def test_restore_page_is_staff_only(client, people, repo):
    lifecycle.repository_soft_delete(repo=repo, acting_user=people["owner"])
    client.force_login(people["owner"])
    assert client.post("/owner/proj/restore").status_code == 404
    client.force_login(people["staff"])
    assert client.post("/owner/proj/restore").status_code == 302
    client.logout()
    assert client.get("/owner/proj").status_code == 200


def test_deleted_name_stays_taken_until_purge(people, repo):
    lifecycle.repository_soft_delete(repo=repo, acting_user=people["owner"])
    with pytest.raises(Conflict):
        services.repository_create(owner=people["owner"], name="proj")


def test_purge_removes_disk_rows_and_bundle_objects(people, repo, settings, tmp_path, git_home):
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    assert bundle_services.bundles_build(repo=repo).status == "built"
    keys = list(
        Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).values_list(
            "storage_key", flat=True
        )
    )
    store = Path(settings.BUNDLE_STORAGE["path"])
    assert keys and all((store / key).is_file() for key in keys)
    # Another repository with the same content shares the content-addressed objects: kept.
    twin = RepositoryFactory(owner=people["owner"], name="twin")
    shared = Bundle.objects.filter(repository=repo).first()
    Bundle.objects.create(
        repository=twin,
        kind=shared.kind,
        flavor=shared.flavor,
        creation_token=1,
        storage_key=shared.storage_key,
        state=BundleState.PUBLISHED,
    )
    disk = repo.disk_path

    lifecycle.repository_soft_delete(repo=repo, acting_user=people["owner"])
    assert purge_deleted_repositories() == 0  # within retention
    assert disk.exists()
    backdate(repo, settings.REPOSITORY_DELETE_RETENTION_DAYS + 1)
    assert purge_deleted_repositories() == 1

    assert not Repository.objects.filter(pk=repo.pk).exists()
    assert not Bundle.objects.filter(repository_id=repo.pk).exists()
    assert not disk.exists() and not list((settings.REPO_ROOT / ".trash").iterdir())
    assert (store / shared.storage_key).is_file()
    assert not any((store / key).exists() for key in keys if key != shared.storage_key)
    assert twin.disk_path.exists()


def test_restored_repository_is_not_purged(people, repo, settings):
    lifecycle.repository_soft_delete(repo=repo, acting_user=people["owner"])
    backdate(repo, settings.REPOSITORY_DELETE_RETENTION_DAYS + 1)
    lifecycle.repository_restore(repo=Repository.objects.get(pk=repo.pk), acting_user=people["staff"])
    assert purge_deleted_repositories() == 0
    assert Repository.objects.filter(pk=repo.pk).exists() and repo.disk_path.exists()


def test_purge_that_cannot_delete_bundles_keeps_everything(people, repo, settings, monkeypatch):
    lifecycle.repository_soft_delete(repo=repo, acting_user=people["owner"])
    backdate(repo, settings.REPOSITORY_DELETE_RETENTION_DAYS + 1)

    def down(**_kwargs):
        raise bundle_services.StorageError("store unreachable")

    monkeypatch.setattr(bundle_services, "bundles_repository_purged", down)
    assert purge_deleted_repositories() == 0
    assert Repository.objects.filter(pk=repo.pk).exists() and repo.disk_path.exists()


def test_rename_redirects_pages_and_api(client, people, repo):
    client.force_login(people["owner"])
    response = client.post("/owner/proj/settings/rename", {"name": "renamed"})
    assert response.status_code == 302
    repo.refresh_from_db()
    assert repo.name == "renamed" and repo.disk_path.exists()
    client.logout()
    for old, new in [
        ("/owner/proj", "/owner/renamed"),
        ("/OWNER/Proj/commits", "/owner/renamed/commits"),
        ("/owner/proj/json-pushes?full=1", "/owner/renamed/json-pushes?full=1"),
        ("/api/v1/repos/owner/proj", "/api/v1/repos/owner/renamed"),
    ]:
        response = client.get(old)
        assert response.status_code == 301 and response["Location"] == new, old
    assert RepositoryRedirect.objects.filter(owner_name="owner", name="proj", repository=repo).exists()


def test_private_repository_redirects_only_those_who_may_read_it(client, people, repo):
    services.repository_update(repo=repo, visibility=Visibility.PRIVATE)
    lifecycle.repository_move(repo=repo, acting_user=people["owner"], new_name="secret")
    assert page_status(client, None, "/owner/proj") == 404
    assert page_status(client, people["stranger"], "/owner/proj") == 404
    assert page_status(client, people["member"], "/owner/proj") == 301


def test_new_repository_under_old_name_wins_and_drops_the_redirect(client, people, repo):
    lifecycle.repository_move(repo=repo, acting_user=people["owner"], new_name="renamed")
    newcomer = services.repository_create(owner=people["owner"], name="proj")
    assert not RepositoryRedirect.objects.exists()
    assert client.get("/owner/proj").status_code == 200
    assert api(None).get("/api/v1/repos/owner/proj").json()["id"] == newcomer.pk


def test_transfer_to_yourself_or_by_staff(client, people, repo):
    services.membership_set(repo=repo, user=people["member"], role=Role.ADMIN)
    other = UserFactory(username="other")
    with pytest.raises(Forbidden):
        lifecycle.repository_move(repo=repo, acting_user=people["member"], new_owner=other)
    response = api(people["member"]).post(
        "/api/v1/repos/owner/proj/transfer", {"owner": "member"}, format="json"
    )
    assert response.status_code == 200 and response.json()["full_name"] == "member/proj"
    repo.refresh_from_db()
    assert repo.owner == people["member"]
    # The new owner is admin as owner; the old owner keeps admin as a member.
    assert not Membership.objects.filter(repository=repo, user=people["member"]).exists()
    assert Membership.objects.get(repository=repo, user=people["owner"]).role == Role.ADMIN
    assert client.get("/owner/proj/commits").status_code == 301
    assert client.get("/owner/proj/commits")["Location"] == "/member/proj/commits"
    # Staff may hand it to anyone, renaming on the way; chains of old names all lead there.
    response = api(people["staff"]).post(
        "/api/v1/repos/member/proj/transfer", {"owner": "other", "name": "p2"}, format="json"
    )
    assert response.status_code == 200 and response.json()["full_name"] == "other/p2"
    assert client.get("/owner/proj")["Location"] == "/other/p2"
    assert client.get("/member/proj")["Location"] == "/other/p2"
    # Moving back onto an old name removes that redirect.
    lifecycle.repository_move(
        repo=Repository.objects.get(pk=repo.pk),
        acting_user=people["staff"],
        new_owner=people["owner"],
        new_name="proj",
    )
    assert client.get("/owner/proj").status_code == 200
    assert not RepositoryRedirect.objects.filter(owner_name="owner", name="proj").exists()


def test_rename_conflicts_and_invalid_names(people, repo):
    RepositoryFactory(owner=people["owner"], name="taken")
    with pytest.raises(Conflict):
        lifecycle.repository_move(repo=repo, acting_user=people["owner"], new_name="TAKEN")
    with pytest.raises(InvalidInput):
        lifecycle.repository_move(repo=repo, acting_user=people["owner"], new_name="bad/name")
    response = api(people["owner"]).post(
        "/api/v1/repos/owner/proj/transfer", {"name": "taken"}, format="json"
    )
    assert response.status_code == 409


def test_moved_path_replaces_only_the_repository_segments():
    from types import SimpleNamespace

    from repos.redirects import moved_path

    repo = SimpleNamespace(owner=SimpleNamespace(username="new"), name="name")
    assert moved_path("/v1/repos.git/info/refs", "v1", "repos", repo) == "/new/name.git/info/refs"
    assert moved_path("/api/v1/repos/v1/repos/pushes", "v1", "repos", repo) == "/api/v1/repos/new/name/pushes"
    assert moved_path("/V1/Repos", "v1", "repos", repo) == "/new/name"
    assert moved_path("/v1/reposx", "v1", "repos", repo) is None
