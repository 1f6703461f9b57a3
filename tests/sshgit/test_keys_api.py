"""The keys API: /api/v1/user/keys and /api/v1/repos/<owner>/<name>/keys, with token scopes,
404s for what one may not see, 403 for readers, and the one error format."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from repos import services as repo_services
from repos.models import Role, Visibility
from sshgit import services
from sshgit.models import PublicKey
from tests.factories import RepositoryFactory, UserFactory
from tests.sshgit.keygen import ed25519_line

pytestmark = pytest.mark.django_db


def api(user=None, scope: str = "write") -> APIClient:
    client = APIClient()
    if user is not None:
        secret = repo_services.token_create(user=user, scope=scope)[1]
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()["error"]
    assert code is None or body["code"] == code, body
    return body


@pytest.fixture
def alice():
    return UserFactory(username="alice")


def test_user_keys_crud(alice):
    client = api(alice)
    assert client.get("/api/v1/user/keys").json()["results"] == []
    line = ed25519_line("alice@laptop")
    created = client.post("/api/v1/user/keys", {"key": line}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    key = PublicKey.objects.get(user=alice)
    assert body["id"] == key.pk and body["title"] == "alice@laptop" and body["fingerprint"] == key.fingerprint
    assert body["key"] == " ".join(line.split()[:2]) and body["bits"] == 256 and body["last_used_at"] is None
    listed = client.get("/api/v1/user/keys").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == key.pk
    assert client.get(f"/api/v1/user/keys/{key.pk}").json()["fingerprint"] == key.fingerprint
    assert client.delete(f"/api/v1/user/keys/{key.pk}").status_code == 204
    assert not PublicKey.objects.exists()
    error(client.get(f"/api/v1/user/keys/{key.pk}"), 404)


def test_scopes_and_anonymous(alice):
    key = services.add_user_key(alice, title="k", text=ed25519_line())
    anonymous = APIClient()
    error(anonymous.get("/api/v1/user/keys"), 401)
    error(anonymous.post("/api/v1/user/keys", {"key": ed25519_line()}, format="json"), 401)
    reader = api(alice, scope="read")
    assert reader.get("/api/v1/user/keys").status_code == 200
    assert reader.get(f"/api/v1/user/keys/{key.pk}").status_code == 200
    refused = error(
        reader.post("/api/v1/user/keys", {"title": "x", "key": ed25519_line()}, format="json"), 403
    )
    assert "write scope" in refused["message"]
    error(reader.delete(f"/api/v1/user/keys/{key.pk}"), 403)
    error(api(alice, scope="status").get("/api/v1/user/keys"), 403)
    assert PublicKey.objects.filter(user=alice).count() == 1


def test_another_user_s_key_is_404(alice):
    key = services.add_user_key(alice, title="k", text=ed25519_line())
    bob = api(UserFactory(username="bob"))
    error(bob.get(f"/api/v1/user/keys/{key.pk}"), 404)
    error(bob.delete(f"/api/v1/user/keys/{key.pk}"), 404)
    assert bob.get("/api/v1/user/keys").json()["count"] == 0
    assert PublicKey.objects.filter(pk=key.pk).exists()


def test_validation_errors(alice):
    client = api(alice)
    missing = error(client.post("/api/v1/user/keys", {"title": "x"}, format="json"), 400, "invalid")
    assert "key" in missing["fields"]
    bad = error(client.post("/api/v1/user/keys", {"key": "ssh-rsa AAAA"}, format="json"), 400, "invalid_key")
    assert bad["fields"]["key"] == [bad["message"]]
    untitled = error(client.post("/api/v1/user/keys", {"key": ed25519_line()}, format="json"), 400)
    assert untitled["fields"] == {"title": ["Give the key a title."]}
    line = ed25519_line()
    services.add_deploy_key(RepositoryFactory(owner=alice, name="p"), acting_user=alice, title="d", text=line)
    taken = error(
        client.post("/api/v1/user/keys", {"title": "x", "key": line}, format="json"), 409, "key_in_use"
    )
    assert taken["message"] == "This key is already in use"
    long_title = {"title": "t" * 101, "key": ed25519_line()}
    assert "title" in error(client.post("/api/v1/user/keys", long_title, format="json"), 400)["fields"]


@pytest.fixture
def private(alice):
    repo = RepositoryFactory(owner=alice, name="proj", visibility=Visibility.PRIVATE)
    repo_services.membership_set(repo=repo, user=UserFactory(username="rita"), role=Role.from_label("reader"))
    return repo


def test_deploy_keys_crud(alice, private):
    client = api(alice)
    url = "/api/v1/repos/alice/proj/keys"
    assert client.get(url).json()["results"] == []
    created = client.post(url, {"title": "ci", "key": ed25519_line(), "read_write": True}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["read_write"] is True and body["created_by"] == "alice" and body["title"] == "ci"
    readonly = client.post(url, {"title": "mirror", "key": ed25519_line()}, format="json").json()
    assert readonly["read_write"] is False
    assert [k["title"] for k in client.get(url).json()["results"]] == ["ci", "mirror"]
    assert client.get(f"{url}/{body['id']}").json()["fingerprint"] == body["fingerprint"]
    assert client.delete(f"{url}/{body['id']}").status_code == 204
    error(client.get(f"{url}/{body['id']}"), 404)
    assert list(PublicKey.objects.values_list("title", flat=True)) == ["mirror"]


def test_deploy_keys_are_for_admins(alice, private):
    key = services.add_deploy_key(private, acting_user=alice, title="ci", text=ed25519_line())
    url = "/api/v1/repos/alice/proj/keys"
    # A reader may see the repository: 403, as the other admin-only routes answer.
    rita = api(UserFactory(username="rita"))
    error(rita.get(url), 403)
    error(rita.get(f"{url}/{key.pk}"), 403)
    error(rita.delete(f"{url}/{key.pk}"), 403)
    error(rita.post(url, {"title": "x", "key": ed25519_line()}, format="json"), 403)
    # An outsider gets what a missing repository gets.
    otto = api(UserFactory(username="otto"))
    for path in (url, f"{url}/{key.pk}", "/api/v1/repos/alice/nope/keys"):
        error(otto.get(path), 404)
    error(otto.post(url, {"title": "x", "key": ed25519_line()}, format="json"), 404)
    error(APIClient().get(url), 401)  # never anonymous, whether or not the repository exists
    error(APIClient().get("/api/v1/repos/alice/nope/keys"), 401)
    # Staff manage every repository's deploy keys.
    assert api(UserFactory(username="sam", is_staff=True)).get(url).json()["count"] == 1
    # A read token may list but not add.
    error(api(alice, scope="read").post(url, {"title": "x", "key": ed25519_line()}, format="json"), 403)
    assert api(alice, scope="read").get(url).status_code == 200
    # Another repository's key id is not found under this one.
    other = RepositoryFactory(owner=alice, name="other")
    error(api(alice).get(f"/api/v1/repos/alice/other/keys/{key.pk}"), 404)
    assert other.deploy_keys.count() == 0


def test_schema_lists_the_key_routes():
    schema = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/v1/user/keys"])
    assert {"get", "delete"} <= set(paths["/api/v1/user/keys/{key_id}"])
    assert {"get", "post"} <= set(paths["/api/v1/repos/{owner}/{name}/keys"])
    assert {"get", "delete"} <= set(paths["/api/v1/repos/{owner}/{name}/keys/{key_id}"])
