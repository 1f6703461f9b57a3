"""Expensive pages against the real server, per address: search (the site's, a repository's and
the search API, one count), blame, compare and archives."""

from __future__ import annotations

import uuid

import pytest

from repos import services
from tests.factories import UserFactory
from tests.gitutil import git
from tests.repos.ratelimit_support import limited_web, random_address, request

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
LIMIT = 3


@pytest.fixture(scope="module")
def server(live_env, tmp_path_factory):
    with limited_web(
        live_env,
        tmp_path_factory.mktemp("web-logs"),
        search=f"{LIMIT}/d",
        blame=f"{LIMIT}/d",
        compare=f"{LIMIT}/d",
        archive=f"{LIMIT}/d",
    ) as url:
        yield url


@pytest.fixture
def repo(server, tmp_path, git_home):
    owner = UserFactory(username=f"pages-{uuid.uuid4().hex[:8]}")
    token = services.token_create(user=owner, scope="write")[1]
    services.repository_create(owner=owner, name="demo", visibility="public")
    services.repository_create(owner=owner, name="hidden", visibility="private")
    work = tmp_path / "work"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    (work / "f.txt").write_text("seed\n")
    git(git_home, "add", "f.txt", cwd=work)
    git(git_home, "commit", "--quiet", "-m", "seed", cwd=work)
    git(git_home, "checkout", "--quiet", "-b", "feature", cwd=work)
    (work / "f.txt").write_text("seed, changed\n")
    git(git_home, "commit", "--quiet", "-am", "change", cwd=work)
    host = server.removeprefix("http://")
    pushed = git(
        git_home,
        "push",
        f"http://{owner.username}:{token}@{host}/{owner.username}/demo.git",
        "main",
        "feature",
        cwd=work,
    )
    assert pushed.returncode == 0, pushed.stderr
    return f"/{owner.username}/demo"


PAGES = {
    "blame": "{repo}/blame/main/f.txt",
    "compare": "{repo}/compare/main...feature",
    "archive": "{repo}/archive/main.tar.gz",
}


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_expensive_pages_are_limited_per_address(server, repo, kind):
    path = PAGES[kind].format(repo=repo)
    address = random_address()
    answers = [request(server + path, address=address) for _ in range(LIMIT + 1)]
    assert [a.status for a in answers] == [200] * LIMIT + [429]
    assert int(answers[-1].headers["Retry-After"]) > 0
    assert "Too many requests for these pages from your address" in answers[-1].body
    # Refused before anything is looked up: the same answer for what does not exist or is private.
    assert request(server + path.replace("/demo/", "/hidden/"), address=address).status == 429
    assert request(server + path.replace(repo, "/nobody/nothing"), address=address).status == 429
    # Other addresses are not concerned.
    assert request(server + path, address=random_address()).status == 200


def test_the_search_pages_and_api_share_one_count_per_address(server, repo):
    address = random_address()
    assert request(server + "/search?q=seed", address=address).status == 200
    assert request(server + f"{repo}/search?q=seed", address=address).status == 200
    assert request(server + "/api/v1/search/code?q=seed", address=address).status == 200
    refused = request(server + "/api/v1/search/repositories?q=demo", address=address)
    assert refused.status == 429 and int(refused.headers["Retry-After"]) > 0
    assert refused.json()["error"]["code"] == "throttled"
    assert request(server + "/search?q=seed", address=address).status == 429
    assert request(server + "/search?q=seed", address=random_address()).status == 200
