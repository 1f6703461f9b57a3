"""The whole auth matrix with real git: (anonymous, no role, reader, maintainer, admin) x
(public, private) x (clone, push), checking both HTTP statuses and what git does."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request

import pytest

from repos import services
from repos.models import Push, Role
from tests.factories import UserFactory
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

WHO = ["anonymous", "norole", "reader", "maintainer", "admin"]
CAN_PUSH = {"maintainer", "admin"}


@pytest.fixture
def world(live_server_url, tmp_path, git_home):
    owner = UserFactory(username="owner")
    owner_token = services.token_create(user=owner, scope="write")[1]
    repos = {}
    for visibility in ("public", "private"):
        repo = services.repository_create(owner=owner, name=f"{visibility}-repo", visibility=visibility)
        repos[visibility] = repo
    tokens = {"admin": ("owner", owner_token)}
    for who in ("norole", "reader", "maintainer"):
        user = UserFactory(username=who)
        tokens[who] = (who, services.token_create(user=user, scope="write")[1])
        if who != "norole":
            for repo in repos.values():
                services.membership_set(repo=repo, user=user, role=Role.from_label(who))
    # Seed both repositories with one commit, pushed by the owner over HTTP.
    work = tmp_path / "seed"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    (work / "f").write_text("seed\n")
    git(git_home, "add", "f", cwd=work)
    git(git_home, "commit", "--quiet", "-m", "seed", cwd=work)
    host = live_server_url.removeprefix("http://")
    for repo in repos.values():
        git(git_home, "push", f"http://owner:{owner_token}@{host}/owner/{repo.name}.git", "main", cwd=work)
    return {"repos": repos, "tokens": tokens, "host": host, "work": work}


def remote(world, who: str, repo_name: str) -> str:
    if who == "anonymous":
        return f"http://{world['host']}/owner/{repo_name}.git"
    username, token = world["tokens"][who]
    return f"http://{username}:{token}@{world['host']}/owner/{repo_name}.git"


def status_of(world, who: str, path: str) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://{world['host']}{path}")
    if who != "anonymous":
        username, token = world["tokens"][who]
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{username}:{token}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def expected_clone_status(who: str, visibility: str) -> int:
    if visibility == "public":
        return 200
    return {"anonymous": 401, "norole": 404}.get(who, 200)


def expected_push_status(who: str, visibility: str) -> int:
    if who == "anonymous":
        return 401
    if visibility == "private" and who == "norole":
        return 404
    return 200  # connecting is allowed; the pre-receive hook decides per ref


@pytest.mark.parametrize("visibility", ["public", "private"])
@pytest.mark.parametrize("who", WHO)
def test_clone(world, who, visibility, tmp_path, git_home):
    name = world["repos"][visibility].name
    status, headers = status_of(world, who, f"/owner/{name}.git/info/refs?service=git-upload-pack")
    assert status == expected_clone_status(who, visibility)
    if status == 401:
        assert headers["WWW-Authenticate"].startswith("Basic ")
    result = git(git_home, "clone", "--quiet", remote(world, who, name), str(tmp_path / "c"), check=False)
    if status == 200:
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "c" / "f").read_text() == "seed\n"
    else:
        assert result.returncode != 0
        assert not (tmp_path / "c" / "f").exists()


@pytest.mark.parametrize("visibility", ["public", "private"])
@pytest.mark.parametrize("who", WHO)
def test_push(world, who, visibility, git_home):
    repo = world["repos"][visibility]
    status, _ = status_of(world, who, f"/owner/{repo.name}.git/info/refs?service=git-receive-pack")
    assert status == expected_push_status(who, visibility)
    work = world["work"]
    git(git_home, "commit", "--quiet", "--allow-empty", "-m", f"by {who}", cwd=work)
    before = Push.objects.filter(repository=repo).count()
    result = git(
        git_home, "push", remote(world, who, repo.name), "HEAD:refs/heads/main", cwd=work, check=False
    )
    main_before = git(git_home, "--git-dir", str(repo.disk_path), "rev-parse", "refs/heads/main").stdout
    if who in CAN_PUSH:
        assert result.returncode == 0, result.stderr
        assert Push.objects.filter(repository=repo).count() == before + 1
    elif status == 200:
        # Those who may read but not write: the branch push lands in their workspace
        # (docs/workspaces.md), and main does not move.
        assert result.returncode == 0, result.stderr
        assert f"HEAD -> refs/users/{who}/main" in result.stderr
        assert Push.objects.filter(repository=repo).count() == before + 1
        after = git(git_home, "--git-dir", str(repo.disk_path), "rev-parse", "refs/heads/main").stdout
        assert after == main_before
    else:
        assert result.returncode != 0
        assert Push.objects.filter(repository=repo).count() == before


@pytest.mark.parametrize(
    "path",
    [
        "/owner/missing.git/info/refs?service=git-upload-pack",
        "/nobody/missing/info/refs?service=git-receive-pack",
    ],
)
def test_missing_repositories_look_like_private_ones(world, path):
    assert status_of(world, "anonymous", path)[0] == 401
    assert status_of(world, "norole", path)[0] == 404


def test_read_token_cannot_push_and_bad_tokens_are_refused(world, git_home):
    reader = UserFactory(username="readonly")
    token = services.token_create(user=reader, scope="read")[1]
    services.membership_set(repo=world["repos"]["public"], user=reader, role=Role.ADMIN)
    world["tokens"]["readonly"] = ("readonly", token)
    status, _ = status_of(world, "readonly", "/owner/public-repo.git/info/refs?service=git-receive-pack")
    assert status == 403
    assert status_of(world, "readonly", "/owner/public-repo.git/info/refs?service=git-upload-pack")[0] == 200
    world["tokens"]["bogus"] = ("owner", "hst_" + "A" * 40)
    assert status_of(world, "bogus", "/owner/public-repo.git/info/refs?service=git-upload-pack")[0] == 401
    # An account password is never a git credential.
    owner = world["repos"]["public"].owner
    owner.set_password("long-enough-passphrase-42")
    owner.save()
    world["tokens"]["password"] = ("owner", "long-enough-passphrase-42")
    assert status_of(world, "password", "/owner/private-repo.git/info/refs?service=git-upload-pack")[0] == 401
