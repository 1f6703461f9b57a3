"""REST API v1: token auth, scopes, pagination, one error format, the OpenAPI schema."""

import base64

import pytest
from rest_framework.test import APIClient

from repos import services
from repos.models import AccessToken, Repository, Role
from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db


def client_for(secret: str | None = None, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"{scheme} {secret}")
    return client


def basic(username: str, password: str) -> str:
    return base64.b64encode(f"{username}:{password}".encode()).decode()


def assert_error(response, status: int, code: str | None = None):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
    if code:
        assert body["error"]["code"] == code, body


@pytest.fixture
def alice():
    return UserFactory(username="alice")


@pytest.fixture
def alice_write(alice):
    return services.token_create(user=alice, scope="write")[1]


@pytest.fixture
def alice_read(alice):
    return services.token_create(user=alice, scope="read")[1]


def test_current_user_with_each_auth_scheme(alice, alice_read):
    for scheme, cred in [
        ("Bearer", alice_read),
        ("token", alice_read),
        ("Basic", basic("alice", alice_read)),
    ]:
        response = client_for(cred, scheme).get("/api/v1/user")
        assert response.status_code == 200, (scheme, response.content)
        assert response.json()["username"] == "alice"


def test_unauthenticated_and_bad_credentials(alice):
    response = client_for().get("/api/v1/user")
    assert_error(response, 401)
    assert "WWW-Authenticate" in response
    assert_error(client_for("hst_" + "x" * 40).get("/api/v1/user"), 401)
    assert_error(client_for("garbage", "Basic").get("/api/v1/user"), 401)
    # An account password is not an API credential (except to bootstrap a token).
    alice.set_password("long-enough-passphrase-42")
    alice.save()
    assert_error(client_for(basic("alice", "long-enough-passphrase-42"), "Basic").get("/api/v1/user"), 401)


def test_token_lifecycle_over_api(alice, alice_write):
    api = client_for(alice_write)
    response = api.post("/api/v1/user/tokens", {"name": "deploy", "scope": "read"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    secret = body["token"]
    assert body["scope"] == "read" and body["prefix"] == secret[:8]
    listing = api.get("/api/v1/user/tokens").json()
    assert listing["count"] == 2
    assert all("token" not in item and "digest" not in item for item in listing["results"])
    assert client_for(secret).get("/api/v1/user").status_code == 200
    assert api.delete(f"/api/v1/user/tokens/{body['id']}").status_code == 204
    assert_error(client_for(secret).get("/api/v1/user"), 401)
    assert AccessToken.objects.get(pk=body["id"]).revoked_at is not None


def test_bootstrap_first_token_with_password(alice):
    alice.set_password("long-enough-passphrase-42")
    alice.save()
    api = client_for(basic("alice", "long-enough-passphrase-42"), "Basic")
    response = api.post("/api/v1/user/tokens", {"scope": "write"}, format="json")
    assert response.status_code == 201, response.content
    wrong = client_for(basic("alice", "wrong-password"), "Basic")
    assert_error(wrong.post("/api/v1/user/tokens", {"scope": "write"}, format="json"), 401)


def test_tokens_of_others_are_invisible(alice, alice_write):
    bob = UserFactory(username="bob")
    bob_token, _ = services.token_create(user=bob)
    api = client_for(alice_write)
    assert_error(api.delete(f"/api/v1/user/tokens/{bob_token.pk}"), 404, "not_found")
    assert AccessToken.objects.get(pk=bob_token.pk).revoked_at is None


def test_read_scope_cannot_write(alice_read):
    api = client_for(alice_read)
    assert_error(api.post("/api/v1/repos", {"name": "x"}, format="json"), 403, "permission_denied")
    assert_error(api.post("/api/v1/user/tokens", {"scope": "write"}, format="json"), 403)
    assert not Repository.objects.exists()


def test_create_repository(alice, alice_write):
    api = client_for(alice_write)
    response = api.post(
        "/api/v1/repos", {"name": "hello", "description": "<b>hi</b>", "visibility": "private"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["full_name"] == "alice/hello"
    assert body["clone_url"] == "http://testserver/alice/hello.git"
    assert body["visibility"] == "private" and body["default_branch"] == "main"
    repo = Repository.objects.get(pk=body["id"])
    assert (repo.disk_path / "HEAD").exists()


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"name": "../etc"}, "name"),
        ({"name": "a/b"}, "name"),
        ({"name": "api"}, "name"),
        ({"name": "x" * 300}, "name"),
        ({"name": "ok", "visibility": "secret"}, "visibility"),
        ({"name": "ok", "default_branch": "a..b"}, "default_branch"),
        ({}, "name"),
    ],
)
def test_create_repository_invalid(alice_write, payload, field):
    response = client_for(alice_write).post("/api/v1/repos", payload, format="json")
    assert_error(response, 400)
    assert field in response.json()["error"]["fields"]
    assert not Repository.objects.exists()


def test_create_repository_conflict(alice, alice_write):
    api = client_for(alice_write)
    assert api.post("/api/v1/repos", {"name": "Same"}, format="json").status_code == 201
    assert_error(api.post("/api/v1/repos", {"name": "same"}, format="json"), 409, "name_taken")
    assert Repository.objects.count() == 1


def test_malformed_json_is_a_clear_400(alice_write):
    response = client_for(alice_write).post("/api/v1/repos", "{not json", content_type="application/json")
    assert_error(response, 400, "parse_error")


def test_private_repositories_are_404_to_outsiders(alice, alice_write):
    repo = RepositoryFactory(owner=alice, name="secret", visibility="private")
    RepositoryFactory(owner=alice, name="open")
    outsider = services.token_create(user=UserFactory(username="mallory"))[1]
    for client in (client_for(), client_for(outsider)):
        assert_error(client.get("/api/v1/repos/alice/secret"), 404, "not_found")
        assert_error(client.get("/api/v1/repos/alice/missing"), 404, "not_found")
        names = [r["name"] for r in client.get("/api/v1/repos").json()["results"]]
        assert names == ["open"]
    assert client_for(alice_write).get("/api/v1/repos/ALICE/Secret").status_code == 200
    reader = UserFactory(username="rita")
    services.membership_set(repo=repo, user=reader, role=Role.READER)
    rita = client_for(services.token_create(user=reader, scope="write")[1])
    assert rita.get("/api/v1/repos/alice/secret").status_code == 200
    # A reader sees it but may not change it.
    assert_error(rita.patch("/api/v1/repos/alice/secret", {"description": "x"}, format="json"), 403)


def test_update_and_members(alice, alice_write):
    RepositoryFactory(owner=alice, name="proj")
    bob = UserFactory(username="bob")
    api = client_for(alice_write)
    response = api.patch(
        "/api/v1/repos/alice/proj", {"visibility": "private", "description": "d"}, format="json"
    )
    assert response.status_code == 200 and response.json()["visibility"] == "private"
    assert (
        api.put("/api/v1/repos/alice/proj/members/bob", {"role": "maintainer"}, format="json").status_code
        == 200
    )
    members = api.get("/api/v1/repos/alice/proj/members").json()
    assert members == [{"username": "alice", "role": "admin"}, {"username": "bob", "role": "maintainer"}]
    assert_error(api.put("/api/v1/repos/alice/proj/members/bob", {"role": "owner"}, format="json"), 400)
    assert_error(api.put("/api/v1/repos/alice/proj/members/nobody", {"role": "reader"}, format="json"), 404)
    bob_api = client_for(services.token_create(user=bob, scope="write")[1])
    assert_error(bob_api.put("/api/v1/repos/alice/proj/members/bob", {"role": "admin"}, format="json"), 403)
    assert api.delete("/api/v1/repos/alice/proj/members/bob").status_code == 204
    assert_error(api.delete("/api/v1/repos/alice/proj/members/alice"), 403)


def test_pagination(alice, alice_read):
    for i in range(35):
        Repository.objects.create(owner=alice, name=f"r{i:02d}")  # rows only: listing needs no disk
    api = client_for(alice_read)
    first = api.get("/api/v1/repos").json()
    assert first["count"] == 35 and len(first["results"]) == 30 and first["next"]
    second = api.get("/api/v1/repos", {"page": 2}).json()
    assert len(second["results"]) == 5
    assert len(api.get("/api/v1/repos", {"per_page": 5}).json()["results"]) == 5
    assert_error(api.get("/api/v1/repos", {"page": 99}), 404)


def test_openapi_schema():
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in [
        "/api/v1/repos",
        "/api/v1/repos/{owner}/{name}",
        "/api/v1/user/tokens",
        "/api/v1/user/tokens/{token_id}",
        "/api/v1/repos/{owner}/{name}/members/{username}",
    ]:
        assert path in schema["paths"], path
    assert "post" in schema["paths"]["/api/v1/repos"]


def test_openapi_schema_generates_without_warnings():
    from django.core.management import call_command

    # --fail-on-warn turns any unresolved serializer or auth scheme into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")
