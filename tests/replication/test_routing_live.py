"""A replica and a primary, both real: what the replica answers itself, what it forwards, and
where git pushes land, told apart by `X-Hostsite-Node` on each answer."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from replication.models import WriteMark
from repos import services
from repos.models import Push, Repository
from tests.gitutil import git
from tests.replication.routing_nodes import MAX_LAG, Browser, age_changes, running_nodes, sync
from tests.repos.livepush import Account
from tests.repos.rawhttp import BROKEN, LogTail, chunk, send

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def routing_nodes(live_env, tmp_path_factory):
    yield from running_nodes(live_env, tmp_path_factory)


def _commit(env, work: Path, name: str) -> str:
    (work / f"{name}.txt").write_text(f"{name}\n")
    git(env, "add", f"{name}.txt", cwd=work)
    git(env, "commit", "--quiet", "-m", name, cwd=work)
    return git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()


def _url(base: str, account: Account, repo) -> str:
    """The base URL with the account's credentials in it, and the repository's path if given."""
    host = base.removeprefix("http://")
    if repo is None:
        return f"http://{account.user.username}:{account.token}@{host}"
    return account.url(host, repo)


@pytest.fixture
def project(routing_nodes, git_home, tmp_path):
    """alice/project on the primary with one pushed commit, copied to the replica."""
    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="project")
    work = tmp_path / "work"
    git(git_home, "init", "--quiet", "--initial-branch=main", str(work))
    first = _commit(git_home, work, "first")
    git(git_home, "push", "--quiet", _url(routing_nodes.primary_url, alice, repo), "main", cwd=work)
    sync(routing_nodes, repo)
    return {"owner": alice, "repo": repo, "work": work, "first": first}


def _trace_nodes(stderr: str) -> set[str]:
    """The nodes that answered a git command, from GIT_TRACE_CURL's received headers."""
    marker = "recv header: x-hostsite-node:"
    return {
        line[line.lower().index(marker) + len(marker) :].strip()
        for line in stderr.splitlines()
        if marker in line.lower()
    }


def _clone(env, url: str, target: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    result = git(
        {**env, "GIT_TRACE_CURL": "1", "GIT_TRACE_CURL_NO_DATA": "1"}, "clone", "--quiet", url, str(target)
    )
    return result, _trace_nodes(result.stderr)


def test_fresh_copy_is_served_by_the_replica(routing_nodes, project, git_home, tmp_path):
    repo = project["repo"]
    status, _, headers = Browser(routing_nodes.replica_url).request("GET", f"/{repo.full_name}")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1"
    _, nodes = _clone(git_home, f"{routing_nodes.replica_url}/{repo.full_name}.git", tmp_path / "clone")
    assert nodes == {"r1"}
    head = git(git_home, "rev-parse", "HEAD", cwd=tmp_path / "clone").stdout.strip()
    assert head == project["first"]
    # The primary names itself too.
    assert Browser(routing_nodes.primary_url).request("GET", "/")[2]["X-Hostsite-Node"] == "p1"


def test_copy_behind_beyond_the_lag_is_forwarded(routing_nodes, project, git_home, tmp_path):
    repo, work = project["repo"], project["work"]
    second = _commit(git_home, work, "second")
    git(
        git_home, "push", "--quiet", _url(routing_nodes.primary_url, project["owner"], repo), "main", cwd=work
    )
    age_changes(repo, MAX_LAG * 2)

    status, page, headers = Browser(routing_nodes.replica_url).request("GET", f"/{repo.full_name}/commits")
    assert status == 200 and headers["X-Hostsite-Node"] == "p1"
    assert second[:12] in page  # the primary's content, not the replica's copy
    _, nodes = _clone(git_home, f"{routing_nodes.replica_url}/{repo.full_name}.git", tmp_path / "clone")
    assert nodes == {"p1"}
    assert git(git_home, "rev-parse", "HEAD", cwd=tmp_path / "clone").stdout.strip() == second
    # Once the copy holds it, the replica answers again.
    sync(routing_nodes, repo)
    assert (
        Browser(routing_nodes.replica_url).request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "r1"
    )


def test_who_reads_a_copy_within_the_lag(routing_nodes, project, git_home, tmp_path):
    """Anonymous readers and signed-in users who wrote nothing newer get the replica's copy;
    the user who pushed what it lacks is forwarded, over git, the API and the web alike."""
    repo, work, alice = project["repo"], project["work"], project["owner"]
    _commit(git_home, work, "second")
    git(git_home, "push", "--quiet", _url(routing_nodes.primary_url, alice, repo), "main", cwd=work)
    repo.refresh_from_db()
    mark = WriteMark.objects.get(user=alice.user, repository=repo)
    assert mark.generation == repo.generation  # written by the primary as the push committed

    replica = routing_nodes.replica_url
    anonymous = Browser(replica)
    assert anonymous.request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "r1"
    assert anonymous.request("GET", f"/api/v1/repos/{repo.full_name}")[2]["X-Hostsite-Node"] == "r1"

    bob = Account("bob")
    assert (
        Browser(replica).request("GET", f"/{repo.full_name}", headers={"Authorization": bob.basic})[2][
            "X-Hostsite-Node"
        ]
        == "r1"
    )
    bob_web = Browser(replica)
    bob_web.login_as(bob.user)
    assert bob_web.request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "r1"

    # git sends credentials only once asked (a 401), which a public repository never does:
    # read-your-writes over git needs them sent up front (or a private repository).
    proactive = {**git_home, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "http.extraHeader"}
    proactive["GIT_CONFIG_VALUE_0"] = f"Authorization: {alice.basic}"
    _, nodes = _clone(proactive, f"{replica}/{repo.full_name}.git", tmp_path / "alice-clone")
    assert nodes == {"p1"}
    _, nodes = _clone(git_home, _url(replica, alice, repo), tmp_path / "alice-anonymous-clone")
    assert nodes == {"r1"}
    bearer = {"Authorization": f"Bearer {alice.token}"}
    assert (
        Browser(replica).request("GET", f"/api/v1/repos/{repo.full_name}", headers=bearer)[2][
            "X-Hostsite-Node"
        ]
        == "p1"
    )
    alice_web = Browser(replica)
    alice_web.login_as(alice.user)
    assert alice_web.request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "p1"

    sync(routing_nodes, repo)
    assert alice_web.request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "r1"


def _credential_store(git_home, tmp_path, account: Account, *bases: str) -> dict[str, str]:
    """git's store helper holding the account's token for each base URL: after a redirect, git
    asks its helpers for the credentials of where it was sent, not of the URL it was given."""
    store = tmp_path / "credentials"
    store.write_text("".join(f"{_url(base, account, None)}\n" for base in bases))
    env = {**git_home, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "credential.helper"}
    env["GIT_CONFIG_VALUE_0"] = f"store --file={store}"
    return env


def test_git_push_to_the_replica_lands_on_the_primary(routing_nodes, project, git_home, tmp_path):
    repo, work, alice = project["repo"], project["work"], project["owner"]
    second = _commit(git_home, work, "second")
    replica_url = f"{routing_nodes.replica_url}/{repo.full_name}.git"
    env = _credential_store(git_home, tmp_path, alice, routing_nodes.replica_url, routing_nodes.primary_url)
    result = git(env, "push", replica_url, "main", cwd=work, check=False)
    assert result.returncode == 0, result.stderr
    primary_head = git(git_home, "--git-dir", str(routing_nodes.primary_path(repo)), "rev-parse", "main")
    assert primary_head.stdout.strip() == second
    assert Push.objects.filter(repository=repo).count() == 2
    assert not routing_nodes.replica_path(repo).joinpath("refs/heads/main").exists() or (
        git(git_home, "--git-dir", str(routing_nodes.replica_path(repo)), "rev-parse", "main").stdout.strip()
        != second
    )

    # A client that will not follow redirects is told where it was sent, and pushes nothing.
    third = _commit(git_home, work, "third")
    result = git(env, "-c", "http.followRedirects=false", "push", replica_url, "main", cwd=work, check=False)
    assert result.returncode != 0
    assert "remote: This node is a read-only replica: push to " + routing_nodes.primary_url in result.stderr
    assert "returned error: 307" in result.stderr
    primary_head = git(git_home, "--git-dir", str(routing_nodes.primary_path(repo)), "rev-parse", "main")
    assert primary_head.stdout.strip() != third


def test_web_form_through_the_replica_lands_on_the_primary(routing_nodes, project):
    alice = project["owner"]
    web = Browser(routing_nodes.replica_url)
    web.login_as(alice.user)
    status, body, headers = web.request(
        "POST", "/new", {"name": "made-on-r1", "description": "", "visibility": "public"}, form="/new"
    )
    assert status == 302, body
    assert headers["X-Hostsite-Node"] == "p1"
    assert headers["Location"].endswith("/alice/made-on-r1")
    created = Repository.objects.get(owner=alice.user, name="made-on-r1")
    assert routing_nodes.primary_path(created).is_dir()
    assert not routing_nodes.replica_path(created).exists()

    # Settings of an existing repository, from its own page's form.
    repo = project["repo"]
    status, body, headers = web.request(
        "POST",
        f"/{repo.full_name}/settings",
        {"description": "edited through r1", "visibility": "public", "default_branch": "main"},
        form=f"/{repo.full_name}/settings",
    )
    assert status in (200, 302), body
    assert headers["X-Hostsite-Node"] == "p1"
    repo.refresh_from_db()
    assert repo.description == "edited through r1"
    # The primary's cookie (its "Settings saved." message) reaches the browser.
    assert "messages" in {cookie.name for cookie in web.jar}
    assert len(headers.get_all("Date")) == 1

    # Without the CSRF token the primary refuses it, as it would directly.
    status, _, headers = web.request("POST", "/new", {"name": "no-token", "visibility": "public"})
    assert status == 403 and headers["X-Hostsite-Node"] == "p1"
    assert not Repository.objects.filter(name="no-token").exists()


def test_login_through_the_replica(routing_nodes, project):
    alice = project["owner"]
    alice.user.set_password("long-enough-passphrase-42")
    alice.user.save()
    web = Browser(routing_nodes.replica_url)
    status, body, headers = web.request(
        "POST", "/login", {"username": "alice", "password": "long-enough-passphrase-42"}, form="/login"
    )
    assert status == 302, body
    assert headers["X-Hostsite-Node"] == "p1"
    assert any(c.name == "sessionid" for c in web.jar)
    status, _, headers = web.request("GET", "/settings/profile")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1"


def test_api_write_through_the_replica(routing_nodes, project):
    alice = project["owner"]
    auth = {"Authorization": f"Bearer {alice.token}", "Content-Type": "application/json"}
    status, body, headers = Browser(routing_nodes.replica_url).request(
        "POST", "/api/v1/repos", json.dumps({"name": "api-made"}), auth
    )
    assert status == 201, body
    assert headers["X-Hostsite-Node"] == "p1"
    # URLs are the replica's: the primary answered for the Host the client asked.
    assert json.loads(body)["clone_url"] == f"{routing_nodes.replica_url}/alice/api-made.git"
    assert Repository.objects.filter(owner=alice.user, name="api-made").exists()

    status, body, headers = Browser(routing_nodes.replica_url).request(
        "PATCH", "/api/v1/repos/alice/api-made", json.dumps({"description": "patched"}), auth
    )
    assert status == 200 and headers["X-Hostsite-Node"] == "p1", body
    assert Repository.objects.get(owner=alice.user, name="api-made").description == "patched"


def test_work_graph_on_the_replica_follows_its_copy(routing_nodes, project, git_home):
    """showwork caches graphs under a token the primary replaces when refs move; the replica's
    own cache never sees that, so its key follows the generation the replica holds."""
    repo, work, alice = project["repo"], project["work"], project["owner"]
    replica = Browser(routing_nodes.replica_url)
    status, before, headers = replica.request("GET", f"/{repo.full_name}/work.txt")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1", before
    git(git_home, "checkout", "--quiet", "-b", "topic-on-primary", cwd=work)
    _commit(git_home, work, "topic")
    url = _url(routing_nodes.primary_url, alice, repo)
    git(git_home, "push", "--quiet", url, "topic-on-primary", cwd=work)
    sync(routing_nodes, repo)
    status, after, headers = replica.request("GET", f"/{repo.full_name}/work.txt")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1"
    assert "topic-on-primary" not in before and "topic-on-primary" in after, after


def _pkt(line: str) -> bytes:
    return f"{len(line) + 4:04x}{line}".encode()


def test_a_chunked_git_request_is_streamed_to_the_primary(routing_nodes, project, git_home):
    """git sends a large fetch request chunked (past http.postBuffer): the replica passes it
    on chunked as it arrives, and the pack comes back from the primary."""
    import http.client

    repo, work = project["repo"], project["work"]
    second = _commit(git_home, work, "second")
    git(
        git_home, "push", "--quiet", _url(routing_nodes.primary_url, project["owner"], repo), "main", cwd=work
    )
    age_changes(repo, MAX_LAG * 2)
    body = _pkt(f"want {second} ofs-delta\n") + b"0000" + _pkt("done\n")
    host, port = routing_nodes.replica_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest("POST", f"/{repo.full_name}.git/git-upload-pack")
    conn.putheader("Content-Type", "application/x-git-upload-pack-request")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders(message_body=iter([body[:7], body[7:]]), encode_chunked=True)
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    assert response.status == 200 and response.getheader("X-Hostsite-Node") == "p1"
    assert response.getheader("Content-Type") == "application/x-git-upload-pack-result"
    assert payload.startswith(b"0008NAK\n") and b"PACK" in payload


def test_a_forwarded_request_reaching_a_replica_goes_no_further(routing_nodes, project, settings):
    """A replica that gets a request a node forwarded (PRIMARY_URL naming a replica) answers
    508 itself instead of forwarding it round a circle."""
    from replication import forward

    settings.HOSTSITE_NODE = "r9"  # signed as another replica would (the nodes share the key)
    signature = forward.sign_mark("203.0.113.7", "POST", "/new")
    headers = {
        "X-Hostsite-Forwarded-By": "r9",
        "X-Hostsite-Forwarded-For": "203.0.113.7",
        "X-Hostsite-Forwarded-Signature": signature,
    }
    status, body, response = Browser(routing_nodes.replica_url).request("POST", "/new", b"", headers)
    assert status == 508 and response["X-Hostsite-Node"] == "r1", body
    assert "check PRIMARY_URL" in body
    # The same mark, forged for another address, is nobody's: forwarded as the client's own.
    headers["X-Hostsite-Forwarded-For"] = "198.51.100.1"
    status, _, response = Browser(routing_nodes.replica_url).request("POST", "/new", b"", headers)
    assert response["X-Hostsite-Node"] == "p1" and status in (302, 403)


def test_a_copy_made_by_the_replication_engine_is_served(routing_nodes, git_home, tmp_path):
    """The same with the real engine (replication.sync, run here as the replica would run it)
    in place of the stand-in: what it records is what routing reads."""
    from tests.replication.support import Replica

    alice = Account("alice")
    repo = services.repository_create(owner=alice.user, name="engine-copied")
    work = tmp_path / "work"
    git(git_home, "init", "--quiet", "--initial-branch=main", str(work))
    first = _commit(git_home, work, "first")
    git(git_home, "push", "--quiet", _url(routing_nodes.primary_url, alice, repo), "main", cwd=work)
    replica = Replica("r1", routing_nodes.replica_root, routing_nodes.primary_url)
    replica.register()
    replica.sync(repo.pk)
    assert replica.refs(repo.pk)["refs/heads/main"] == first
    status, _, headers = Browser(routing_nodes.replica_url).request("GET", f"/{repo.full_name}/commits")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1"
    _, nodes = _clone(git_home, f"{routing_nodes.replica_url}/{repo.full_name}.git", tmp_path / "clone")
    assert nodes == {"r1"}


def test_a_malformed_chunked_body_is_refused_by_the_replica_and_the_primary_stays_up(
    routing_nodes, project, git_home
):
    """A fetch the replica forwards whose chunked body breaks: the replica answers 400 itself,
    does not take the primary for down, and neither node logs a traceback."""
    repo, work = project["repo"], project["work"]
    second = _commit(git_home, work, "second")
    git(
        git_home, "push", "--quiet", _url(routing_nodes.primary_url, project["owner"], repo), "main", cwd=work
    )
    age_changes(repo, MAX_LAG * 2)  # the replica's copy is behind: fetches go to the primary
    primary_log, replica_log = LogTail(routing_nodes.primary), LogTail(routing_nodes.replica)
    request = _pkt(f"want {second} ofs-delta\n") + b"0000" + _pkt("done\n")
    path = f"/{repo.full_name}.git/git-upload-pack"
    headers = {"Content-Type": "application/x-git-upload-pack-request"}
    status, text = send(routing_nodes.replica_url, path, headers, chunk(request[:20]) + BROKEN["size zz"])
    assert status == 400 and text == b"malformed request body: Invalid chunk size: b'zz'\n", (status, text)
    # A body shorter than its Content-Length: refused at once, not left for the primary to
    # wait on until it times out.
    started = time.monotonic()
    short = {**headers, "Content-Length": str(len(request) + 100)}
    status, text = send(routing_nodes.replica_url, path, short, request)
    assert status == 400 and b"before Content-Length bytes came" in text, (status, text)
    assert time.monotonic() - started < 10
    # Still forwarded: the primary answers the same fetch, well framed.
    status, text = send(routing_nodes.replica_url, path, headers, chunk(request) + b"0\r\n\r\n")
    assert status == 200 and text.startswith(b"0008NAK\n") and b"PACK" in text
    assert primary_log.clean(), primary_log.text()
    assert replica_log.clean(), replica_log.text()
