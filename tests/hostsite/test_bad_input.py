"""Bad input answers 4xx, never 500: controls in paths, NUL for git, deep or large JSON, a busy
database, invisible characters in ref names, malformed wants."""

from __future__ import annotations

import http.client
import json
import sqlite3
import time

import pytest
from django.db import connection
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from gitcore import pktline
from gitcore.git import InvalidGitArgument, run_git
from repos import services
from repos.api.errors import exception_handler
from repos.errors import InvalidInput
from repos.hooks import pushpolicy, refnames, refspace
from repos.middleware import RejectBadInputMiddleware
from repos.templatetags.names import visible, visible_text
from tests.factories import UserFactory

ZERO = "0" * 40


@pytest.fixture
def owner_api(db):
    alice = UserFactory(username="alice")
    services.repository_create(owner=alice, name="demo")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=alice, scope='write')[1]}")
    return client


BAD_PATHS = [
    "/alice/demo/workspaces/al%00ice",
    "/alice/demo/workspaces/alice/re%00f",
    "/alice/demo/work/stack/refs/users/alice/a%00b",
    "/alice/demo/tree/ma%00in",
    "/api/v1/repos/alice/demo/workspaces/al%00ice",
    "/api/v1/repos/alice/de%0amo",
    "/api/v1/users/a%7fb",
    "/api/v1/users/a%c2%9bb",  # U+009B, a C1 control
]


@pytest.mark.django_db
@pytest.mark.parametrize("path", BAD_PATHS)
def test_control_characters_in_paths_answer_400(owner_api, path):
    response = owner_api.get(path)
    assert response.status_code == 400, response.content
    if path.startswith("/api/"):
        assert response.json()["error"]["code"] == "invalid"


def test_git_runner_refuses_nul_with_a_typed_error():
    with pytest.raises(InvalidGitArgument):
        run_git(["rev-parse", "main\0"])
    with pytest.raises(InvalidGitArgument):
        run_git(["version"], env={"GIT_PROTOCOL": "version=2\0"})


def test_the_runners_refusal_answers_400_on_pages_and_in_the_api():
    """The runner's error is invalid input, as every service's is (it sits below repos, its
    base in hostsite.errors): a view that lets a NUL through to git answers 400, never 500,
    and a form that catches InvalidInput shows it."""
    with pytest.raises(InvalidGitArgument) as caught:
        run_git(["rev-parse", "main\0"])
    assert isinstance(caught.value, InvalidInput)
    middleware = RejectBadInputMiddleware(lambda request: None)
    page = middleware.process_exception(RequestFactory().get("/alice/demo/tree/x"), caught.value)
    assert page.status_code == 400 and b"NUL" in page.content
    api = middleware.process_exception(RequestFactory().get("/api/v1/repos/alice/demo"), caught.value)
    assert api.status_code == 400 and json.loads(api.content)["error"]["code"] == "invalid"
    drf = exception_handler(caught.value, {})
    assert drf.status_code == 400 and drf.data["error"]["code"] == "invalid"


@pytest.mark.django_db
def test_api_answers_json_for_unrouted_paths(owner_api):
    response = owner_api.delete("/api/v1/repos/alice/demo/hooks/not-a-number")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
def test_deeply_nested_json_answers_400(owner_api):
    for body in ("[" * 2000 + "]" * 2000, '{"a":' * 2000 + "1" + "}" * 2000, "[" * 65 + "]" * 65):
        response = owner_api.post("/api/v1/repos", body, content_type="application/json")
        assert response.status_code == 400, response.content
        assert "nested more than 64 levels" in response.json()["error"]["message"]
    # Brackets inside strings are not nesting; 64 levels are fine (and then refused on meaning).
    response = owner_api.post(
        "/api/v1/repos", json.dumps({"name": "[" * 500, "x": [[[1]]]}), content_type="application/json"
    )
    assert response.status_code == 400 and "nested" not in response.json()["error"]["message"]


@pytest.mark.django_db
def test_large_and_non_json_bodies(owner_api, settings):
    settings.API_MAX_BODY = 1000
    body = json.dumps({"name": "x", "description": "d" * 2000})
    response = owner_api.post("/api/v1/repos", body, content_type="application/json")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    response = owner_api.post("/api/v1/repos", "name=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    response = owner_api.post("/api/v1/repos", b"\xff\xfe", content_type="application/json")
    assert response.status_code == 400
    response = owner_api.post("/api/v1/repos", '{"name": NaN}', content_type="application/json")
    assert response.status_code == 400
    response = owner_api.post("/api/v1/repos", json.dumps({"name": "fine"}), content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.fixture
def short_busy_timeout():
    """The test database's connection, reopened with a short busy timeout."""
    options = connection.settings_dict.setdefault("OPTIONS", {})
    before = options.get("timeout")
    options["timeout"] = 0.5
    connection.close()
    yield
    options["timeout"] = before
    connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_locked_sqlite_database_answers_503_with_retry_after(short_busy_timeout):
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's write lock")
    alice = UserFactory(username="alice")
    token = services.token_create(user=alice, scope="write")[1]
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.get("/api/v1/user").status_code == 200
    holder = sqlite3.connect(connection.settings_dict["NAME"], timeout=0, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        response = api.post("/api/v1/repos", {"name": "blocked"}, format="json")
        waited = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert response.status_code == 503, response.content
    assert response["Retry-After"].isdigit()
    assert response.json()["error"]["code"] == "busy"
    assert 0.4 < waited < 10
    # Once the lock is gone the same request goes through.
    assert api.post("/api/v1/repos", {"name": "blocked"}, format="json").status_code == 201


# --- invisible characters in ref names -----------------------------------------------------

INVISIBLE_REFS = [
    "refs/heads/evil\u202egnp.exe",
    "refs/users/alice/a\u200bb",
    "refs/tags/v1\ufeff",
    "refs/for/main/top\u2066ic",
    "refs/users/alice/soft\u00adhyphen",
    "refs/heads/x\u0085",
]


@pytest.mark.parametrize("ref", INVISIBLE_REFS)
def test_the_policy_refuses_invisible_characters(ref):
    def decide(update):
        return pushpolicy.decide_all(
            role="admin",
            pusher="alice",
            updates=[update],
            rules=pushpolicy.Rules(),
            is_ancestor=lambda a, b: True,
            workspace_ref_count=lambda u: 0,
        )

    reasons = decide(pushpolicy.Update("a" * 40, "b" * 40, ref))
    assert len(reasons) == 1 and "invisible" in reasons[0], reasons
    assert not any(ord(c) in pushpolicy.INVISIBLE for c in reasons[0])  # the message shows escapes
    # Deleting one stays possible: that is how such a ref goes away (refs/for/ only receives).
    deleted = decide(pushpolicy.Update("a" * 40, ZERO, ref))
    assert deleted == [] or (ref.startswith(refspace.FOR) and "only receives work" in deleted[0])


def test_the_policy_and_the_pages_share_one_table():
    assert pushpolicy.INVISIBLE is refnames.INVISIBLE
    assert 0x202E in pushpolicy.INVISIBLE and ord("a") not in pushpolicy.INVISIBLE


def test_names_are_shown_escaped_not_hidden():
    html = visible("evil\u202egnp.exe<b>")
    assert "\u202e" not in html and "\\u202e" in html and 'title="U+202E RIGHT-TO-LEFT OVERRIDE"' in html
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert visible("plain<b>") == "plain&lt;b&gt;"
    assert visible_text("a\u200bb") == "a\\u200bb"


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_push_of_a_bidi_ref_is_refused_and_existing_names_show_escaped(world):
    alice = world.add("alice", "maintainer")
    alice.commit("work")
    result = alice.push("HEAD:refs/heads/evil\u202egnp.exe")
    assert result.returncode != 0
    assert "invisible or direction-changing" in result.stderr and "U+202E" in result.stderr
    assert "refs/heads/evil\u202egnp.exe" not in world.refs()
    result = alice.push("HEAD:refs/users/alice/a\u200bb")
    assert result.returncode != 0 and "U+200B" in result.stderr
    # A file name with one is stored as pushed, and its page shows it escaped.
    alice.commit("x", name="read\u202eme.txt")
    assert alice.push("HEAD:refs/users/alice/files").returncode == 0
    sha = alice.git("rev-parse", "HEAD", check=True).stdout.strip()
    page = Client().get(f"/owner/project/tree/{sha}")
    assert page.status_code == 200
    text = page.content.decode()
    assert (
        'read<span class="invisible-char" title="U+202E RIGHT-TO-LEFT OVERRIDE">\\u202e</span>me.txt' in text
    )
    assert "\u202e" not in text


# --- want lines -----------------------------------------------------------------------------


def test_want_lines_are_validated():
    import io

    from gitcore import fetchrequest
    from gitcore.oids import SHA1

    good = "ab" * 20
    body = pktline.encode(f"want {good.upper()} ofs-delta\n") + pktline.FLUSH + pktline.encode("done\n")
    assert fetchrequest.read(io.BytesIO(body), SHA1, v2=False).values("want") == [good]
    for oid in ("zzzz", "a" * 39, "g" * 40, "a" * 41, "a" * 64, "a" * 64 + "x"):
        body = pktline.encode(f"want {oid}\n") + pktline.FLUSH + pktline.encode("done\n")
        with pytest.raises(fetchrequest.BadLine):
            fetchrequest.read(io.BytesIO(body), SHA1, v2=False)


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_malformed_wants_answer_400_over_http(world):
    host, port = world.host.split(":")
    v0 = pktline.encode("want zzzz\n") + pktline.FLUSH + pktline.encode("done\n")
    v2 = (
        pktline.encode("command=fetch\n")
        + pktline.DELIM
        + pktline.encode("want zzzz\n")
        + pktline.encode("done\n")
        + pktline.FLUSH
    )
    for body, protocol in ((v0, None), (v2, "version=2")):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"Content-Type": "application/x-git-upload-pack-request", "Content-Length": str(len(body))}
        if protocol:
            headers["Git-Protocol"] = protocol
        conn.request("POST", "/owner/project.git/git-upload-pack", body=body, headers=headers)
        response = conn.getresponse()
        text = response.read()
        conn.close()
        assert response.status == 400, (protocol, response.status, text[:300])
        assert b"want" in text


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_invalid_utf8_and_nul_paths_answer_400_on_the_live_server(world):
    host, port = world.host.split(":")
    for target in (
        "/owner/project/tree/%FF",
        "/api/v1/repos/owner/%C3%28",
        "/owner/project/workspaces/a%00b",
        "/owner/project.git/info/refs%00?service=git-upload-pack",
    ):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", target)
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 400, (target, response.status)
