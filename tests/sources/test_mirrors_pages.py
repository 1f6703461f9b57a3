"""Pull mirrors seen in process through the settings page, the repository page and the API:
who may see and change a mirror, and an upstream's error shown escaped."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from repos import services as repo_services
from repos.models import Mirror, Visibility
from tests.live import free_port
from tests.sources.mirrorsupport import XSS, capture_enqueued, make_people, refs_of, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch) -> list[tuple[str, tuple]]:
    return capture_enqueued(monkeypatch)


@pytest.fixture
def people() -> dict:
    return make_people()


def test_the_settings_page_is_404_to_all_but_admins(people):
    repo = people["repo"]
    mirror_url = "/olga/proj/settings/mirror"
    for visibility in (Visibility.PUBLIC, Visibility.PRIVATE):
        repo_services.repository_update(repo=repo, visibility=visibility)
        for client in (
            Client(),
            signed_in(people["reader"]),
            signed_in(people["outsider"]),
            signed_in(people["staff"]),
        ):
            assert client.get(mirror_url).status_code == 404
            assert (
                client.post(mirror_url, {"action": "create", "url": "http://127.0.0.1/x"}).status_code == 404
            )
            assert client.post(f"{mirror_url}/sync").status_code == 404
        assert signed_in(people["olga"]).get(mirror_url).status_code == 200
    assert not Mirror.objects.exists()


def test_an_admin_sets_up_changes_pauses_and_stops_a_mirror_on_the_page(
    people, settings, enqueued, django_capture_on_commit_callbacks
):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    settings.MIRROR_MIN_INTERVAL_MINUTES = 5
    olga = signed_in(people["olga"])
    page = "/olga/proj/settings/mirror"
    for bad in (
        {"url": "file:///etc/passwd"},
        {"url": XSS},
        {"url": "http://127.0.0.1/x.git", "interval_minutes": "2"},
        {"url": "http://127.0.0.1/x.git", "interval_minutes": XSS},
        {"url": "x" * 5000},
    ):
        response = olga.post(page, {"action": "create", **bad})
        assert response.status_code == 400
        assert XSS not in response.content.decode()
    assert olga.post(page, {"action": "bogus"}).status_code == 400
    assert not Mirror.objects.exists() and not enqueued

    upstream = f"http://127.0.0.1:{free_port()}/up.git"
    with django_capture_on_commit_callbacks(execute=True):
        response = olga.post(page, {"action": "create", "url": upstream, "interval_minutes": "15"})
    assert response.status_code == 302
    mirror = Mirror.objects.get()
    assert (mirror.url, mirror.interval_minutes, mirror.created_by) == (upstream, 15, people["olga"])
    assert enqueued == [("repos.tasks.sync_mirror", (mirror.pk,))]
    assert f"Mirror of <code>{upstream}</code>" in olga.get(page).content.decode()

    assert olga.post(page, {"action": "update", "url": upstream, "interval_minutes": "45"}).status_code == 302
    mirror.refresh_from_db()
    assert mirror.interval_minutes == 45
    assert olga.post(page, {"action": "pause"}).status_code == 302
    assert Mirror.objects.get().enabled is False
    assert "Resume mirroring" in olga.get(page).content.decode()
    assert olga.post(page, {"action": "sync"}).status_code == 400  # paused: nothing to sync
    assert olga.post(page, {"action": "resume"}).status_code == 302
    assert Mirror.objects.get().enabled is True
    assert olga.post(page, {"action": "delete"}).status_code == 302
    assert not Mirror.objects.exists()
    assert refs_of(people["repo"].disk_path) == {}


def test_the_repository_page_shows_the_mirror_and_escapes_its_error(people):
    repo = people["repo"]
    now = timezone.now()
    Mirror.objects.create(
        repository=repo,
        url="https://example.org/up.git",
        created_by=people["olga"],
        last_success_at=now - timedelta(hours=2),
        next_sync_at=now + timedelta(minutes=20),
        consecutive_failures=3,
        last_error=f"Fetching failed: {XSS}",
    )
    admin_page = signed_in(people["olga"]).get("/olga/proj").content.decode()
    assert "Mirror of <code>https://example.org/up.git</code>" in admin_page
    assert "last synced 2" in admin_page and "next sync in 1" in admin_page
    assert "Sync failing since the last good sync 2" in admin_page and "(3 attempts)" in admin_page
    assert XSS not in admin_page and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in admin_page
    assert "/olga/proj/settings/mirror/sync" in admin_page
    settings_page = signed_in(people["olga"]).get("/olga/proj/settings/mirror").content.decode()
    assert "3 failed attempts in a row" in settings_page and "Sync now" in settings_page
    assert XSS not in settings_page and "&lt;script&gt;window.pwned=1&lt;/script&gt;" in settings_page
    reader_page = signed_in(people["reader"]).get("/olga/proj").content.decode()
    assert "Mirror of" in reader_page and "Sync failing" in reader_page
    assert "/settings/mirror/sync" not in reader_page


# --- API -----------------------------------------------------------------------------------------------


def api(user=None, scope="write") -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(
            HTTP_AUTHORIZATION=f"Bearer {repo_services.token_create(user=user, scope=scope)[1]}"
        )
    return client


def test_the_mirror_api(people, settings, enqueued, django_capture_on_commit_callbacks):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    path = "/api/v1/repos/olga/proj/mirror"
    upstream = f"http://127.0.0.1:{free_port()}/up.git"
    admin = api(people["olga"])
    assert admin.get(path).json()["error"]["code"] == "not_a_mirror"
    assert admin.post(f"{path}/sync").status_code == 404
    for body in (
        {},
        {"url": "ftp://x/y"},
        {"url": "http://u:p@127.0.0.1/x.git"},
        {"url": upstream, "interval_minutes": 0},
        {"url": upstream, "interval_minutes": "x"},
        {"url": upstream, "enabled": "maybe"},
        {"url": ["a"]},
        {"url": "/etc"},
        {"url": upstream, "interval_minutes": 2},
    ):
        response = admin.put(path, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert "error" in response.json() and "p@" not in response.content.decode()
    assert not Mirror.objects.exists()
    assert api(people["reader"]).put(path, {"url": upstream}, format="json").status_code == 403
    assert api(people["olga"], scope="read").put(path, {"url": upstream}, format="json").status_code == 403
    assert APIClient().put(path, {"url": upstream}, format="json").status_code == 401

    with django_capture_on_commit_callbacks(execute=True):
        created = admin.put(path, {"url": upstream, "interval_minutes": 20}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["url"], body["interval_minutes"], body["enabled"], body["created_by"]) == (
        upstream,
        20,
        True,
        "olga",
    )
    assert body["failing"] is False and body["syncing"] is False and body["last_error"] == ""
    mirror = Mirror.objects.get()
    assert enqueued == [("repos.tasks.sync_mirror", (mirror.pk,))]
    assert api(people["reader"]).get(path).json()["url"] == upstream
    assert APIClient().get(path).status_code == 200  # public repository: anyone may read

    updated = admin.put(path, {"interval_minutes": 90, "enabled": False}, format="json").json()
    assert (updated["interval_minutes"], updated["enabled"]) == (90, False)
    response = admin.post(f"{path}/sync")
    assert response.status_code == 409 and response.json()["error"]["code"] == "paused"
    admin.put(path, {"enabled": True}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(f"{path}/sync").status_code == 202
    assert len(enqueued) == 2
    assert api(people["reader"]).post(f"{path}/sync").status_code == 403
    assert api(people["reader"]).delete(path).status_code == 403

    repo_services.repository_update(repo=people["repo"], visibility=Visibility.PRIVATE)
    # Anonymous writes are 401 before any lookup, so they tell nothing of the repository either.
    for client, write in ((APIClient(), 401), (api(people["outsider"]), 404)):
        assert client.get(path).status_code == 404
        for method in ("put", "delete"):
            assert getattr(client, method)(path, {"url": upstream}, format="json").status_code == write
        assert client.post(f"{path}/sync").status_code == write
    assert admin.delete(path).status_code == 204 and not Mirror.objects.exists()
    assert admin.delete(path).status_code == 404
