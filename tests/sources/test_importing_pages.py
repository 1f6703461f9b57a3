"""An import seen from outside, in-process: pushes refused while it runs, the new-repository
and import pages, and the API's request, watch and cancel."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from django.test import Client

from repos import services
from repos.models import ImportState, Membership, Repository, RepositoryImport, Role
from sources import import_requests, import_runs
from tests.factories import UserFactory
from tests.sources.importsupport import SECRET, queued, write_hosted_source

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def hosted_source(tmp_path_factory) -> Path:
    return write_hosted_source(tmp_path_factory.mktemp("hosted"))


@pytest.fixture
def staff(db):
    return UserFactory(username="stan", is_staff=True)


def _basic(user) -> str:
    secret = services.token_create(user=user, scope="write")[1]
    return "Basic " + base64.b64encode(f"{user.username}:{secret}".encode()).decode()


def test_pushes_are_refused_while_importing(staff, hosted_source):
    imp = queued(staff, hosted_source)
    url = f"/{imp.full_name}.git/info/refs?service=git-receive-pack"
    response = Client().get(url, HTTP_AUTHORIZATION=_basic(staff))
    assert response.status_code == 403 and b"being imported" in response.content
    import_runs.run_import(imp.pk, None)
    assert Client().get(url, HTTP_AUTHORIZATION=_basic(staff)).status_code == 200


def test_new_page_offers_the_import_and_all_refs_to_staff_only(client, staff, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="nina")
    client.force_login(user)
    page = client.get("/new").content.decode()
    assert 'name="import_url"' in page and 'type="password" name="import_password"' in page
    assert 'name="refs"' not in page
    response = client.post(
        "/new",
        {
            "name": "p",
            "visibility": "public",
            "import_url": "http://127.0.0.1:9/x.git",
            "refs": "all",
            "import_password": SECRET,
        },
    )
    assert response.status_code == 400 and "Only site staff can import all refs." in response.content.decode()
    assert SECRET not in response.content.decode() and not Repository.objects.exists()
    response = client.post("/new", {"name": "p", "visibility": "public", "import_url": "file:///etc/passwd"})
    assert response.status_code == 400 and "can be imported" in response.content.decode()
    assert not Repository.objects.exists()
    client.force_login(staff)
    assert 'name="refs"' in client.get("/new").content.decode()


def test_new_page_import_lands_on_the_repository_page_with_progress(client, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="nina")
    client.force_login(user)
    response = client.post(
        "/new",
        {
            "name": "p",
            "visibility": "private",
            "import_url": "http://127.0.0.1:9/x.git",
            "import_username": "me",
            "import_password": SECRET,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/nina/p"
    imp = RepositoryImport.objects.get()
    page = client.get("/nina/p").content.decode()
    assert "Import queued" in page and f'data-import-api="/api/v1/imports/{imp.pk}"' in page
    assert "Cancel import" in page and "This repository is empty" not in page and SECRET not in page
    assert "js/import-progress.js" in page


def test_import_pages_are_for_the_requester_admins_and_staff(client, staff, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    owner, admin, reader, other = (UserFactory(username=n) for n in ("olga", "adam", "rita", "otto"))
    imp = import_requests.import_request(requester=owner, name="p", source="http://127.0.0.1:9/x.git")
    Membership.objects.create(repository=imp.repository, user=admin, role=Role.ADMIN)
    Membership.objects.create(repository=imp.repository, user=reader, role=Role.READER)
    url = f"/imports/{imp.pk}"
    assert Client().get(url).status_code == 404
    assert Client().post(url + "/cancel").status_code == 404
    for user, status in [(owner, 200), (admin, 200), (staff, 200), (reader, 404), (other, 404)]:
        client.force_login(user)
        assert client.get(url).status_code == status, user
        assert client.get(f"/api/v1/imports/{imp.pk}").status_code == status, user
    client.force_login(other)
    assert client.post(url + "/cancel").status_code == 404
    assert RepositoryImport.objects.get(pk=imp.pk).state == ImportState.QUEUED
    client.force_login(admin)
    assert client.post(url + "/cancel").status_code == 302
    assert RepositoryImport.objects.get(pk=imp.pk).state == ImportState.CANCELLED
    client.force_login(owner)
    page = client.get(url).content.decode()
    assert "Cancelled." in page and "Cancelled by adam." in page


def test_import_page_escapes_what_the_source_sent(client, staff):
    imp = RepositoryImport.objects.create(
        full_name="stan/x",
        requested_by=staff,
        source_url="https://example.org/x.git",
        state=ImportState.FAILED,
        message="<script>alert(1)</script>",
        report={"source": "s", "heads": 1, "tags": 0, "skipped": {"refs/<img src=x onerror=alert(1)>/": 2}},
    )
    client.force_login(staff)
    page = client.get(f"/imports/{imp.pk}").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "refs/&lt;img src=x onerror=alert(1)&gt;/" in page


def test_api_import_request_watch_and_cancel(client, settings):
    settings.IMPORT_ALLOW_PRIVATE_SOURCES = True
    user = UserFactory(username="api-user")
    token = services.token_create(user=user, scope="write")[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}

    def post(body, **extra):
        return client.post(
            "/api/v1/repos", json.dumps(body), content_type="application/json", **auth, **extra
        )

    for body, status, code in [
        ({"name": "p", "import_url": "file:///etc"}, 400, "source_refused"),
        ({"name": "p", "import_url": "http://127.0.0.1:9/x.git", "refs": "all"}, 403, "forbidden"),
        ({"name": "p", "refs": "all"}, 400, "invalid"),
        (
            {"name": "p", "import_url": "http://127.0.0.1:9/x.git", "mirror": True, "import_password": "x"},
            400,
            "invalid",
        ),
        ({"name": "p", "import_url": "http://127.0.0.1:9/x.git", "default_branch": "x"}, 400, "invalid"),
    ]:
        response = post(body)
        assert (response.status_code, response.json()["error"]["code"]) == (status, code), body
    assert not Repository.objects.exists()

    response = post(
        {"name": "p", "import_url": f"http://u:{SECRET}@127.0.0.1:9/x.git", "visibility": "private"}
    )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["full_name"] == "api-user/p" and body["visibility"] == "private"
    assert body["import"]["state"] == "queued" and body["import"]["source_url"] == "http://127.0.0.1:9/x.git"
    assert (
        response["Location"]
        == body["import"]["url"]
        == f"http://testserver/api/v1/imports/{body['import']['id']}"
    )
    assert SECRET not in response.content.decode()
    import_id = body["import"]["id"]
    watched = client.get(f"/api/v1/imports/{import_id}", **auth).json()
    assert watched["progress"]["phase"] == "Waiting for a worker" and watched["repository"] == "api-user/p"
    assert client.get(f"/api/v1/imports/{import_id}").status_code == 404  # anonymous
    reader = services.token_create(user=user, scope="read")[1]
    assert (
        client.post(f"/api/v1/imports/{import_id}/cancel", HTTP_AUTHORIZATION=f"Bearer {reader}").status_code
        == 403
    )
    response = client.post(f"/api/v1/imports/{import_id}/cancel", **auth)
    assert response.status_code == 202 and response.json()["state"] == "cancelled"
    assert response.json()["repository"] is None and not Repository.objects.exists()
    response = client.post(f"/api/v1/imports/{import_id}/cancel", **auth)
    assert response.status_code == 409 and response.json()["error"]["code"] == "import_finished"
