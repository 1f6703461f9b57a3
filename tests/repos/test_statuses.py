"""Commit statuses over the API: posting, listing and the combined state; who may post with
which credentials (the status scope may do nothing else); bad input stores nothing; the
signal fires once per change of state."""

from __future__ import annotations

import base64

import pytest
from django.test import Client
from rest_framework.test import APIClient

from gitcore.git import run_git
from repos import services, signals, statuses
from repos.models import CommitStatus, Role
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

MISSING = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0d"


@pytest.fixture
def st(tmp_path, git_home):
    """olga's public `proj` (main: two commits) and private `secret`; maud maintains both, rita
    reads both, otto is an outsider. Tokens by (user, scope)."""
    work = Work(tmp_path / "w", git_home)
    first = work.commit("first", {"README.md": "# project\n"})
    head = work.commit("second", {"a.txt": "a\n"})
    public = work.publish(owner="olga", name="proj")
    secret = work.publish(owner="olga", name="secret", private=True)
    users = {"olga": public.owner, "maud": UserFactory(username="maud")}
    users["rita"], users["otto"] = UserFactory(username="rita"), UserFactory(username="otto")
    for repo in (public, secret):
        services.membership_set(repo=repo, user=users["maud"], role=Role.MAINTAINER)
        services.membership_set(repo=repo, user=users["rita"], role=Role.READER)
    tokens = {
        (name, scope): services.token_create(user=user, scope=scope)[1]
        for name, user in users.items()
        for scope in ("read", "write", "status")
    }
    return {
        "public": public,
        "secret": secret,
        "first": first,
        "head": head,
        "users": users,
        "tokens": tokens,
    }


def api(st, who: str | None = None, scope: str = "write") -> APIClient:
    client = APIClient()
    if who:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {st['tokens'][(who, scope)]}")
    return client


def post(client: APIClient, repo: str, sha: str, **body):
    return client.post(f"/api/v1/repos/olga/{repo}/statuses/{sha}", body, format="json")


def error(response, status: int) -> dict:
    assert response.status_code == status, response.content
    return response.json()["error"]


def test_post_list_and_combined(st):
    maud = api(st, "maud", "status")
    response = post(
        maud,
        "proj",
        st["head"],
        state="pending",
        context="ci/build",
        description="building",
        target_url="https://ci.example/1",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["sha"] == st["head"] and body["state"] == "pending" and body["creator"] == "maud"
    assert body["context"] == "ci/build" and body["target_url"] == "https://ci.example/1"
    assert post(maud, "proj", st["head"], state="failure", context="lint").status_code == 201
    # A later report of a context replaces it: still one row per context.
    assert post(maud, "proj", st["head"], state="success", context="ci/build").status_code == 201

    reader = api(st, "rita", "read")
    listing = reader.get(f"/api/v1/repos/olga/proj/statuses/{st['head']}").json()
    assert listing["count"] == 2
    assert [(s["context"], s["state"]) for s in listing["results"]] == [
        ("ci/build", "success"),
        ("lint", "failure"),
    ]
    combined = APIClient().get(f"/api/v1/repos/olga/proj/commits/{st['head']}/status").json()
    assert combined["state"] == "failure" and combined["sha"] == st["head"] and combined["total_count"] == 2
    assert post(maud, "proj", st["head"], state="pending", context="lint").status_code == 201
    assert (
        APIClient().get(f"/api/v1/repos/olga/proj/commits/{st['head']}/status").json()["state"] == "pending"
    )
    assert post(maud, "proj", st["head"], state="success", context="lint").status_code == 201
    assert (
        APIClient().get(f"/api/v1/repos/olga/proj/commits/{st['head']}/status").json()["state"] == "success"
    )
    # Another commit has none of these.
    other = APIClient().get(f"/api/v1/repos/olga/proj/commits/{st['first']}/status").json()
    assert other == {"state": "", "sha": st["first"], "total_count": 0, "statuses": []}
    # A session with write access posts too (the web's own scripts, a maintainer by hand).
    session = APIClient(enforce_csrf_checks=False)
    session.force_login(st["users"]["olga"])
    assert post(session, "proj", st["first"], state="error").json()["context"] == "default"


def test_combined_state_rule():
    assert statuses.combined_state([]) == ""
    assert statuses.combined_state(["success", "success"]) == "success"
    assert statuses.combined_state(["success", "pending"]) == "pending"
    assert statuses.combined_state(["pending", "error", "success"]) == "failure"
    assert statuses.combined_state(["failure", "pending"]) == "failure"


@pytest.mark.parametrize("form", ["short", "upper", "short-upper"])
def test_abbreviated_and_upper_case_ids_are_normalised(st, form):
    written = {"short": st["head"][:7], "upper": st["head"].upper(), "short-upper": st["head"][:9].upper()}[
        form
    ]
    response = post(api(st, "maud"), "proj", written, state="success", context="c")
    assert response.status_code == 201, response.content
    assert CommitStatus.objects.get().sha == st["head"]
    combined = APIClient().get(f"/api/v1/repos/olga/proj/commits/{written}/status").json()
    assert combined["sha"] == st["head"] and combined["total_count"] == 1


def test_unknown_commits_and_other_objects_are_404(st):
    repo = st["public"]
    tree = run_git(["rev-parse", f"{st['head']}^{{tree}}"], repo=repo.disk_path).text.strip()
    maud = api(st, "maud")
    for sha in (MISSING, MISSING[:8], tree):
        err = error(post(maud, "proj", sha, state="success"), 404)
        assert err["code"] == "not_found" and "No commit" in err["message"]
        error(APIClient().get(f"/api/v1/repos/olga/proj/statuses/{sha}"), 404)
        error(APIClient().get(f"/api/v1/repos/olga/proj/commits/{sha}/status"), 404)
    for sha in ("abc", "xyz1234", "a" * 65):
        assert "hexadecimal" in error(post(maud, "proj", sha, state="success"), 400)["message"]
    assert not CommitStatus.objects.exists()


def test_private_repository_is_404_to_outsiders(st):
    sha = st["head"]
    for client in (api(st, "otto", "write"), api(st, "otto", "read"), APIClient()):
        error(client.get(f"/api/v1/repos/olga/secret/statuses/{sha}"), 404)
        error(client.get(f"/api/v1/repos/olga/secret/commits/{sha}/status"), 404)
    error(post(api(st, "otto", "write"), "secret", sha, state="success"), 404)
    error(post(api(st, "otto", "status"), "secret", sha, state="success"), 404)
    # Nobody posts anonymously: 401 before the repository is looked up.
    error(post(APIClient(), "secret", sha, state="success"), 401)
    assert api(st, "rita", "read").get(f"/api/v1/repos/olga/secret/commits/{sha}/status").status_code == 200
    assert not CommitStatus.objects.exists()


def test_only_write_access_with_a_write_or_status_token_posts(st):
    sha = st["head"]
    # Readers and outsiders of a public repository, whatever their token: 403.
    for who in ("rita", "otto"):
        for scope in ("write", "status"):
            err = error(post(api(st, who, scope), "proj", sha, state="success"), 403)
            assert "write access" in err["message"]
    # A read token cannot post, even the owner's; the message names the scopes that can.
    err = error(post(api(st, "olga", "read"), "proj", sha, state="success"), 403)
    assert "status or write scope" in err["message"]
    assert not CommitStatus.objects.exists()
    for scope in ("write", "status"):
        assert post(api(st, "olga", scope), "proj", sha, state="success", context=scope).status_code == 201
    assert CommitStatus.objects.count() == 2


def test_a_status_token_may_do_nothing_but_post_statuses(st, client):
    token = st["tokens"][("olga", "status")]
    olga = api(st, "olga", "status")
    assert post(olga, "proj", st["head"], state="success").status_code == 201
    refused = [
        olga.get(f"/api/v1/repos/olga/proj/statuses/{st['head']}"),
        olga.get(f"/api/v1/repos/olga/proj/commits/{st['head']}/status"),
        olga.get("/api/v1/repos/olga/proj"),
        olga.get("/api/v1/repos/olga/secret"),
        olga.get("/api/v1/user"),
        olga.get("/api/v1/user/tokens"),
        olga.post("/api/v1/user/tokens", {"name": "more", "scope": "write"}, format="json"),
        olga.post("/api/v1/repos", {"name": "another"}, format="json"),
        olga.delete("/api/v1/repos/olga/proj"),
        olga.get("/api/v1/repos/olga/proj/proposals"),
    ]
    for response in refused:
        err = error(response, 403)
        assert "status scope" in err["message"], err
    # The schema has permissions of its own: the token is refused where it authenticates.
    schema = olga.get("/api/v1/schema/")
    assert schema.status_code == 403 and b"status scope" in schema.content
    assert st["users"]["olga"].tokens.count() == 3  # no token was created with it
    # Pages never take tokens: the private repository's page answers as to anyone anonymous.
    anonymous = Client().get("/olga/secret")
    with_token = Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/olga/secret")
    assert (with_token.status_code, with_token.get("Location")) == (
        anonymous.status_code,
        anonymous.get("Location"),
    )
    assert with_token.status_code in (302, 404)
    # Git refuses it before looking at the repository (tests/repos/test_statuses_live.py clones).
    basic = "Basic " + base64.b64encode(f"olga:{token}".encode()).decode()
    for name in ("proj", "secret", "no-such-repo"):
        response = Client().get(
            f"/olga/{name}.git/info/refs?service=git-upload-pack", HTTP_AUTHORIZATION=basic
        )
        assert response.status_code == 403 and b"only post commit statuses" in response.content


BAD_BODIES = [
    ({"state": "ok"}, "state"),
    ({}, "state"),
    ({"state": None}, "state"),
    ({"state": "success", "context": "a\x01b"}, "context"),
    ({"state": "success", "context": "ci\u202ebuild"}, "context"),
    ({"state": "success", "context": "   "}, "context"),
    ({"state": "success", "context": "c" * 256}, "context"),
    ({"state": "success", "context": ["list"]}, "context"),
    ({"state": "success", "description": "d" * 1001}, "description"),
    ({"state": "success", "description": "nul\x00byte"}, "description"),
    ({"state": "success", "target_url": "javascript:alert(1)"}, "target_url"),
    ({"state": "success", "target_url": "/relative/path"}, "target_url"),
    ({"state": "success", "target_url": "//ci.example/x"}, "target_url"),
    ({"state": "success", "target_url": "http://"}, "target_url"),
    ({"state": "success", "target_url": "ftp://ci.example/x"}, "target_url"),
    ({"state": "success", "target_url": "https://ci.example/a b"}, "target_url"),
    ({"state": "success", "target_url": "https://ci.example:port/"}, "target_url"),
    ({"state": "success", "target_url": "https://ci.example/" + "x" * 2000}, "target_url"),
]


@pytest.mark.parametrize("body, field", BAD_BODIES)
def test_bad_input_is_refused_with_a_message_and_nothing_stored(st, body, field):
    fired = []

    def receiver(**kwargs):
        fired.append(kwargs)

    signals.commit_status_changed.connect(receiver)
    try:
        response = api(st, "maud").post(f"/api/v1/repos/olga/proj/statuses/{st['head']}", body, format="json")
    finally:
        signals.commit_status_changed.disconnect(receiver)
    err = error(response, 400)
    assert err["message"] and field in err.get("fields", {}), err
    assert not CommitStatus.objects.exists() and not fired


def test_long_descriptions_are_refused_not_cut(st):
    maud = api(st, "maud")
    exact = "d" * statuses.DESCRIPTION_MAX
    assert post(maud, "proj", st["head"], state="success", description=exact).status_code == 201
    err = error(post(maud, "proj", st["head"], state="failure", description=exact + "!"), 400)
    assert "1001 characters" in err["message"]
    assert CommitStatus.objects.get().state == "success"


def test_contexts_per_commit_are_bounded(st, monkeypatch):
    monkeypatch.setattr(statuses, "MAX_CONTEXTS", 2)
    maud = api(st, "maud")
    for context in ("a", "b"):
        assert post(maud, "proj", st["head"], state="success", context=context).status_code == 201
    assert "2 contexts" in error(post(maud, "proj", st["head"], state="success", context="c"), 400)["message"]
    # Existing contexts still take reports.
    assert post(maud, "proj", st["head"], state="failure", context="a").status_code == 201


def test_the_signal_fires_once_per_change_of_state(st, django_capture_on_commit_callbacks):
    fired = []

    def receiver(**kwargs):
        fired.append({k: kwargs[k] for k in ("repository_id", "sha", "context", "state", "previous_state")})

    signals.commit_status_changed.connect(receiver)
    maud = api(st, "maud")
    try:
        for state, description in [
            ("pending", "queued"),
            ("pending", "running"),  # same state, new text: stored, nobody told
            ("success", "done"),
            ("success", "done"),
        ]:
            with django_capture_on_commit_callbacks(execute=True):
                assert (
                    post(maud, "proj", st["head"][:8], state=state, description=description).status_code
                    == 201
                )
    finally:
        signals.commit_status_changed.disconnect(receiver)
    base = {"repository_id": st["public"].pk, "sha": st["head"], "context": "default"}
    assert fired == [
        {**base, "state": "pending", "previous_state": ""},
        {**base, "state": "success", "previous_state": "pending"},
    ]
    assert CommitStatus.objects.get().description == "done"


def test_commits_of_taken_down_work_are_404_even_to_maintainers(st):
    from workspaces import moderation

    repo = st["public"]
    alice = UserFactory(username="alice")
    staff = UserFactory(username="sam", is_staff=True)
    hidden = st["head"]
    run_git(["update-ref", "refs/heads/main", st["first"]], repo=repo.disk_path)
    run_git(["update-ref", "refs/users/alice/w", hidden], repo=repo.disk_path)
    moderation.do_take_down_workspace(repo=repo, user=alice, acting_user=staff, reason="DMCA")
    for sha in (hidden, hidden[:7], hidden.upper()):
        error(post(api(st, "maud"), "proj", sha, state="success"), 404)
        error(api(st, "olga", "read").get(f"/api/v1/repos/olga/proj/commits/{sha}/status"), 404)
    assert not CommitStatus.objects.exists()
    assert post(api(st, "maud"), "proj", st["first"], state="success").status_code == 201


def test_status_tokens_from_the_command_and_the_tokens_page(st, capsys):
    from django.core.management import call_command

    from repos.models import AccessToken, TokenScope

    call_command("token", "create", "maud", "--scope", "status")
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("hst_")
    created = AccessToken.objects.filter(user=st["users"]["maud"]).order_by("-pk").first()
    assert created.scope == TokenScope.STATUS
    client = Client()
    client.force_login(st["users"]["rita"])
    page = client.get("/settings/tokens")
    assert b'value="status"' in page.content and b"only post commit statuses" in page.content
    response = client.post("/settings/tokens", {"name": "ci", "scope": "status"})
    assert response.status_code == 302
    assert AccessToken.objects.get(user=st["users"]["rita"], name="ci").scope == TokenScope.STATUS


# Who may post a status, by credential: (user or None, "session" or a token scope) -> the
# answer on the public and on the private repository.
POST_TABLE = [
    (None, None, 401, 401),
    ("olga", "session", 201, 201),
    ("olga", "write", 201, 201),
    ("olga", "status", 201, 201),
    ("olga", "read", 403, 403),
    ("maud", "write", 201, 201),
    ("maud", "status", 201, 201),
    ("maud", "read", 403, 403),
    ("rita", "session", 403, 403),
    ("rita", "write", 403, 403),
    ("rita", "status", 403, 403),
    ("otto", "session", 403, 404),
    ("otto", "write", 403, 404),
    ("otto", "status", 403, 404),
]


@pytest.mark.parametrize("who, how, public, private", POST_TABLE)
def test_post_permission_table(st, who, how, public, private):
    if how == "session":
        client = APIClient()
        client.force_login(st["users"][who])
    else:
        client = api(st, who, how)
    for repo, expected in (("proj", public), ("secret", private)):
        response = post(client, repo, st["head"], state="success", context=f"{who}-{how}")
        assert response.status_code == expected, (repo, response.content)
    assert CommitStatus.objects.count() == (2 if public == 201 else 0)


def test_every_api_route_refuses_a_status_token_but_the_post(st):
    """Every API route there is, every method, with placeholders that name nothing: the token
    is refused before any look-up, so a route added later cannot forget the rule."""
    import re

    from tests.visibility_routes import all_routes

    olga = api(st, "olga", "status")
    fill = {"int": "1", "path": "a/b"}
    checked = 0
    for name, pattern in all_routes():
        if not pattern.startswith("api/v1/"):
            continue
        path = "/" + re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: fill.get(m[1] or "", "x1"), pattern)
        for method in ("get", "post", "put", "patch", "delete"):
            response = getattr(olga, method)(path, {}, format="json")
            if name == "api-statuses" and method == "post":
                assert response.status_code == 404, response.content  # no repository x1/x1
                continue
            if name == "api-docs":
                # Swagger UI's static page (GET only); the schema it loads (api-schema) is
                # refused like every other route.
                assert response.status_code == (200 if method == "get" else 405), (method, response)
                continue
            assert response.status_code == 403, (name, method, response.status_code)
            assert b"status scope" in response.content, (name, method)
            checked += 1
    assert checked > 100
