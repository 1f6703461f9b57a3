"""Failed git authentication against the real server with the real git: cut off per address
with 429, Retry-After and a reason git prints; never a successful clone or fetch, however many."""

from __future__ import annotations

import base64
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from repos import services
from tests.factories import UserFactory
from tests.gitutil import git
from tests.repos.ratelimit_support import limited_web, random_address, request

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
FAILURES = 3
WRONG = "hst_" + "x" * 40  # shaped like a token, so the server looks it up


@pytest.fixture(scope="module")
def server(live_env, tmp_path_factory):
    with limited_web(live_env, tmp_path_factory.mktemp("web-logs"), auth_failures=f"{FAILURES}/d") as url:
        yield url


@pytest.fixture
def site(server, tmp_path, git_home):
    owner = UserFactory(username=f"owner-{uuid.uuid4().hex[:8]}")
    token = services.token_create(user=owner, scope="write")[1]
    for visibility in ("private", "public"):
        services.repository_create(owner=owner, name=visibility, visibility=visibility)
    work = tmp_path / "seed"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    (work / "f").write_text("seed\n")
    git(git_home, "add", "f", cwd=work)
    git(git_home, "commit", "--quiet", "-m", "seed", cwd=work)
    host = server.removeprefix("http://")
    for name in ("private", "public"):
        pushed = git(
            git_home,
            "push",
            f"http://{owner.username}:{token}@{host}/{owner.username}/{name}.git",
            "main",
            cwd=work,
        )
        assert pushed.returncode == 0, pushed.stderr
    return {"owner": owner.username, "token": token, "host": host, "base": server}


def url(site, name: str, secret: str | None) -> str:
    credentials = f"{site['owner']}:{secret}@" if secret else ""
    return f"http://{credentials}{site['host']}/{site['owner']}/{name}.git"


def clone(git_home, tmp_path: Path, remote: str, *, address: str):
    target = tmp_path / f"clone-{uuid.uuid4().hex[:8]}"
    # As the TLS proxy in front of the server would say where the client is.
    header = f"http.extraHeader=X-Forwarded-For: {address}"
    return git(git_home, "-c", header, "clone", "--quiet", remote, str(target), check=False)


def info_refs(site, secret: str, *, forwarded_for: str):
    credentials = base64.b64encode(f"{site['owner']}:{secret}".encode()).decode()
    return request(
        f"{site['base']}/{site['owner']}/private.git/info/refs?service=git-upload-pack",
        address=forwarded_for,
        headers={"Authorization": f"Basic {credentials}"},
    )


def test_failed_authentication_is_cut_off_with_429_and_a_reason_git_prints(site, git_home, tmp_path):
    attacker = random_address()
    for _ in range(FAILURES):
        failed = clone(git_home, tmp_path, url(site, "private", WRONG), address=attacker)
        assert failed.returncode != 0 and "Authentication failed" in failed.stderr, failed.stderr

    cut_off = clone(git_home, tmp_path, url(site, "private", WRONG), address=attacker)
    assert cut_off.returncode != 0
    assert "remote: Too many failed authentications from your address. Try again in" in cut_off.stderr
    assert "429" in cut_off.stderr, cut_off.stderr

    answer = info_refs(site, WRONG, forwarded_for=attacker)
    assert answer.status == 429 and int(answer.headers["Retry-After"]) > 0
    assert answer.body.count("\n") == 1 and answer.headers["Content-Type"].startswith("text/plain")
    # What a client writes into X-Forwarded-For itself stands left of what the proxy appended.
    assert info_refs(site, WRONG, forwarded_for=f"203.0.113.7, {attacker}").status == 429

    # The right token is not even checked from there (a right guess must look like a wrong one)...
    refused = clone(git_home, tmp_path, url(site, "private", site["token"]), address=attacker)
    assert refused.returncode != 0 and "Too many failed authentications" in refused.stderr
    # ...but works from anywhere else, and anonymous clones carry no credentials to refuse.
    assert (
        clone(git_home, tmp_path, url(site, "private", site["token"]), address=random_address()).returncode
        == 0
    )
    assert clone(git_home, tmp_path, url(site, "public", None), address=attacker).returncode == 0


def test_successful_clones_and_fetches_are_never_counted(site, git_home, tmp_path):
    farm = random_address()  # a CI farm behind one NAT address
    for _ in range(FAILURES - 1):
        assert clone(git_home, tmp_path, url(site, "private", WRONG), address=farm).returncode != 0

    def clone_ok(i: int) -> int:
        name, secret = ("private", site["token"]) if i % 2 else ("public", None)
        return clone(git_home, tmp_path, url(site, name, secret), address=farm).returncode

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(clone_ok, range(30))) == [0] * 30
    checkout = tmp_path / "checkout"
    git(git_home, "clone", "--quiet", url(site, "private", site["token"]), str(checkout))
    header = f"http.extraHeader=X-Forwarded-For: {farm}"
    for _ in range(20):
        fetched = git(git_home, "-c", header, "fetch", "--quiet", "origin", cwd=checkout, check=False)
        assert fetched.returncode == 0, fetched.stderr

    # None of those counted: one more failure is still within the limit, the next is not.
    assert info_refs(site, WRONG, forwarded_for=farm).status == 401
    assert info_refs(site, WRONG, forwarded_for=farm).status == 429
