"""Admins remove refs from the settings page and the API (repos/views/refs.py, repos/api/refs.py),
on the scene of tests/repos/refs_admin_scene.py."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import services
from repos.models import Push, Visibility
from tests.repos.refs_admin_scene import XSS, make_scene, on_disk, put_refs, unchanged

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    return make_scene()


# --- the page ----------------------------------------------------------------------------------------


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_page_is_for_admins_only(scene):
    url = "/olga/proj/settings/refs"
    for client in (Client(), signed_in(scene.maint), signed_in(scene.reader), signed_in(scene.alice)):
        assert client.get(url).status_code == 404
        assert client.post(url, {"action": "remove", "ref": "refs/pull/1/head"}).status_code == 404
    services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    assert (
        Client().get(url).status_code == 404 and Client().get(url + "?prefix=refs/pull/").status_code == 404
    )
    assert unchanged(scene)


def test_the_page_lists_escapes_and_removes(scene):
    web = signed_in(scene.owner)
    page = web.get("/olga/proj/settings/refs").content.decode()
    assert (
        "refs/keep-around/" in page
        and "refs/imported/pull/" in page
        and "refs/users/" not in page.split("<h2>")[1]
    )
    assert "never advertised" in page
    page = web.get("/olga/proj/settings/refs?prefix=refs/pull/").content.decode()
    assert "refs/pull/&lt;b&gt;x&lt;/b&gt;&quot;&amp;" in page and "<b>x</b>" not in page
    assert web.get("/olga/proj/settings/refs?prefix=refs/users/").status_code == 400

    response = web.post(
        "/olga/proj/settings/refs",
        {"action": "remove", "ref": XSS, "old": scene.c1, "return_prefix": "refs/pull"},
        follow=True,
    )
    assert XSS not in on_disk(scene.repo)
    assert response.redirect_chain[-1][0].endswith("?prefix=refs%2Fpull")
    assert Push.objects.get().protocol == "web"
    # A stale form (the ref moved since the page was drawn) removes nothing.
    page = web.post(
        "/olga/proj/settings/refs",
        {"action": "remove", "ref": "refs/pull/1/head", "old": scene.c1},
        follow=True,
    ).content.decode()
    assert "moved since you looked" in page and "refs/pull/1/head" in on_disk(scene.repo)
    # A namespace needs its prefix typed.
    for confirm in ("", "refs/pul", "refs/heads/"):
        web.post(
            "/olga/proj/settings/refs",
            {"action": "remove_namespace", "prefix": "refs/pull/", "confirm": confirm},
        )
        assert "refs/pull/1/head" in on_disk(scene.repo)
    web.post(
        "/olga/proj/settings/refs",
        {"action": "remove_namespace", "prefix": "refs/pull/", "confirm": "refs/pull"},
    )
    assert not any(ref.startswith("refs/pull/") for ref in on_disk(scene.repo))
    # A branch or tag by name; the default branch stays, with the reason shown.
    web.post("/olga/proj/settings/refs", {"action": "remove_name", "kind": "branch", "name": "feature"})
    web.post("/olga/proj/settings/refs", {"action": "remove_name", "kind": "tag", "name": "v1"})
    page = web.post(
        "/olga/proj/settings/refs", {"action": "remove_name", "kind": "branch", "name": "main"}, follow=True
    ).content.decode()
    assert "default branch and cannot be deleted" in page
    after = on_disk(scene.repo)
    assert "refs/heads/feature" not in after and "refs/tags/v1" not in after and "refs/heads/main" in after
    assert Push.objects.filter(repository=scene.repo).count() == 4


# --- the API -----------------------------------------------------------------------------------------


def api(user=None, scope="write") -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")
    return client


def test_the_api_lists_for_admins_only(scene):
    body = api(scene.owner).get("/api/v1/repos/olga/proj/refs?prefix=refs/pull/&per_page=2").json()
    assert body["count"] == 4 and len(body["results"]) == 2 and body["next"]
    assert {"ref": "refs/pull/1/head", "sha": scene.c2, "symref": ""} in body["results"]
    assert {"prefix": "refs/imported/pull/", "count": 1} in body["namespaces"]
    assert api(scene.owner).get("/api/v1/repos/olga/proj/refs?prefix=refs/users/").status_code == 400
    # Anonymous writes are 401 before any lookup, whether or not the repository is visible.
    for user in (None, scene.reader, scene.maint):
        assert api(user).get("/api/v1/repos/olga/proj/refs").status_code == 403
        assert api(user).delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == (
            401 if user is None else 403
        )
    services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    for user in (None, scene.alice):
        write = 401 if user is None else 404
        assert api(user).get("/api/v1/repos/olga/proj/refs").status_code == 404
        assert api(user).delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == write
        assert (
            api(user)
            .post("/api/v1/repos/olga/proj/refs/remove", {"prefix": "refs/pull/"}, format="json")
            .status_code
            == write
        )
    assert (
        api(scene.owner, scope="read").delete("/api/v1/repos/olga/proj/refs/pull/1/head").status_code == 403
    )
    assert unchanged(scene)


def test_the_api_removes_one_or_many(scene):
    admin = api(scene.owner)
    assert admin.delete(f"/api/v1/repos/olga/proj/refs/pull/1/head?sha={scene.c1}").status_code == 409
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head?sha=nope").status_code == 400
    assert admin.delete("/api/v1/repos/olga/proj/refs/heads/main").status_code == 403
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head%09").status_code == 400
    assert (
        admin.delete("/api/v1/repos/olga/proj/refs/pull/1/head%0a").status_code == 400
    )  # a control character
    assert admin.delete("/api/v1/repos/olga/proj/refs/pull/404/head").status_code == 404
    for body in (
        {},
        {"prefix": "refs/pull/", "refs": ["refs/stash"]},
        {"refs": "refs/stash"},
        {"refs": []},
        {"refs": [1]},
        {"prefix": ["refs/pull/"]},
        {"prefix": "refs/users/"},
        {"refs": ["refs/archive/alice/1"]},
        {"refs": ["refs/x"] * 10_001},
    ):
        response = admin.post(
            "/api/v1/repos/olga/proj/refs/remove", json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 400, (body, response.content)
        assert "error" in response.json()
    assert unchanged(scene)

    assert admin.delete(f"/api/v1/repos/olga/proj/refs/pull/1/head?sha={scene.c2}").status_code == 204
    # refs/remove is a ref name too: DELETE on the bulk route removes it.
    put_refs(scene.repo, {"refs/remove": scene.c1})
    assert admin.delete("/api/v1/repos/olga/proj/refs/remove").status_code == 204
    body = admin.post(
        "/api/v1/repos/olga/proj/refs/remove", {"refs": ["refs/stash", "refs/notes/commits"]}, format="json"
    ).json()
    assert body["removed"] == 2
    body = admin.post("/api/v1/repos/olga/proj/refs/remove", {"prefix": "refs/pull/"}, format="json").json()
    assert body["removed"] == 3
    assert Push.objects.get(pk=body["push_id"]).protocol == "api"
    after = on_disk(scene.repo)
    assert not {"refs/remove", "refs/stash", "refs/notes/commits"} & set(after)
    assert not any(ref.startswith("refs/pull/") for ref in after)
    assert {u.ref for u in Push.objects.get(pk=body["push_id"]).ref_updates.all()} == {
        XSS,
        "refs/pull/2/head",
        "refs/pull/2/merge",
    }
