"""The primary stopped: the replica goes on serving reads from the copies it has (stale ones
included, and says so), and every write gets 503 with Retry-After and a message each kind of
client shows: git prints it, the API's JSON carries it, a browser gets a page."""

from __future__ import annotations

import json

import pytest

from repos import services
from tests.gitutil import git
from tests.replication.routing_nodes import MAX_LAG, Browser, age_changes, running_nodes, sync
from tests.repos.livepush import Account

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

MESSAGE = "read-only: the primary is unavailable; try again shortly"


@pytest.fixture(scope="module")
def routing_nodes(live_env, tmp_path_factory):
    yield from running_nodes(live_env, tmp_path_factory)


def _commit(env, work, name: str) -> str:
    (work / f"{name}.txt").write_text(f"{name}\n")
    git(env, "add", f"{name}.txt", cwd=work)
    git(env, "commit", "--quiet", "-m", name, cwd=work)
    return git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()


def test_reads_go_on_and_writes_wait_while_the_primary_is_down(routing_nodes, git_home, tmp_path):
    alice = Account("alice")
    primary_host = routing_nodes.primary_url.removeprefix("http://")
    replica_host = routing_nodes.replica_url.removeprefix("http://")
    repo = services.repository_create(owner=alice.user, name="project")
    unsynced = services.repository_create(owner=alice.user, name="never-copied")
    work = tmp_path / "work"
    git(git_home, "init", "--quiet", "--initial-branch=main", str(work))
    first = _commit(git_home, work, "first")
    git(git_home, "push", "--quiet", alice.url(primary_host, repo), "main", cwd=work)
    sync(routing_nodes, repo)
    # The copy then falls behind, far beyond the lag: with the primary up it would be forwarded.
    _commit(git_home, work, "second")
    git(git_home, "push", "--quiet", alice.url(primary_host, repo), "main", cwd=work)
    age_changes(repo, MAX_LAG * 2)
    replica = Browser(routing_nodes.replica_url)
    assert replica.request("GET", f"/{repo.full_name}")[2]["X-Hostsite-Node"] == "p1"

    web = Browser(routing_nodes.replica_url)
    web.login_as(alice.user)
    routing_nodes.primary.stop()

    # Reads: the stale copy, marked as such; a repository the replica never held cannot be.
    status, _, headers = replica.request("GET", f"/{repo.full_name}")
    assert status == 200 and headers["X-Hostsite-Node"] == "r1"
    assert headers["X-Hostsite-Stale"] == "primary unavailable"
    clone = tmp_path / "clone"
    git(git_home, "clone", "--quiet", f"{routing_nodes.replica_url}/{repo.full_name}.git", str(clone))
    assert git(git_home, "rev-parse", "HEAD", cwd=clone).stdout.strip() == first
    status, _, headers = replica.request("GET", f"/{unsynced.full_name}")
    assert status == 503 and headers["Retry-After"] == "30"
    # Pages that are no repository's are the replica's own.
    assert replica.request("GET", "/")[0] == 200

    # git push: the user reads why.
    _commit(git_home, work, "third")
    result = git(git_home, "push", alice.url(replica_host, repo), "main", cwd=work, check=False)
    assert result.returncode != 0
    assert f"remote: {MESSAGE}" in result.stderr, result.stderr
    status, body, headers = replica.request(
        "GET", f"/{repo.full_name}.git/info/refs?service=git-receive-pack"
    )
    assert status == 503 and body == MESSAGE + "\n" and headers["Retry-After"] == "30"
    assert headers["Content-Type"].startswith("text/plain")

    # A browser's form: a page; the API: its JSON error.
    status, page, headers = web.request(
        "POST", "/new", {"name": "while-down", "visibility": "public"}, form="/new"
    )
    assert status == 503 and headers["Retry-After"] == "30"
    assert headers["Content-Type"].startswith("text/html")
    assert "read-only: the primary is unavailable" in page
    auth = {"Authorization": f"Bearer {alice.token}", "Content-Type": "application/json"}
    status, body, headers = replica.request("POST", "/api/v1/repos", json.dumps({"name": "while-down"}), auth)
    assert status == 503 and headers["Retry-After"] == "30"
    assert json.loads(body)["error"] == {"code": "read_only", "message": MESSAGE}
