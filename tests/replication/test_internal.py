"""The primary's internal fetch endpoint: every ref to a replica's token, a 404 to anything
else, with git never started for a request that is refused."""

from __future__ import annotations

import time

import pytest
from django.core import signing
from django.test import Client

from gitcore.git import run_git
from replication import internal
from repos import services
from repos.pipeline import serve
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo():
    repo = services.repository_create(
        owner=UserFactory(username="olga"), name="private-work", visibility="private"
    )
    tree = run_git(["mktree"], repo=repo.disk_path, input=b"").text.strip()
    commit = run_git(["commit-tree", tree, "-m", "first"], repo=repo.disk_path).text.strip()
    for ref in ("refs/heads/main", "refs/users/olga/w", "refs/takedown/olga/old", "refs/archive/olga/1/w"):
        run_git(["update-ref", ref, commit], repo=repo.disk_path)
    return repo


@pytest.fixture
def git_runs(monkeypatch):
    started = []
    real = serve.popen_git

    def spy(args, **kwargs):
        started.append(args)
        return real(args, **kwargs)

    monkeypatch.setattr(serve, "popen_git", spy)
    return started


class _OldSigner(signing.TimestampSigner):
    def timestamp(self):
        return signing.b62_encode(int(time.time()) - internal.TOKEN_MAX_AGE - 5)


def _refs_url(repo) -> str:
    return f"/_replication/{repo.pk}.git/info/refs?service=git-upload-pack"


def test_a_valid_token_sees_every_ref_of_the_repository(repo, git_runs):
    response = Client().get(_refs_url(repo), HTTP_AUTHORIZATION=f"Bearer {internal.fetch_token('r1')}")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    for ref in ("refs/heads/main", "refs/users/olga/w", "refs/takedown/olga/old", "refs/archive/olga/1/w"):
        assert ref in body
    assert len(git_runs) == 1


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer ",
        "Bearer not-a-token",
        "Basic b2xnYTpzZWNyZXQ=",
        "Bearer " + internal.fetch_token("r1") + "x",
        "Bearer " + signing.TimestampSigner(salt="another.salt").sign("r1"),
        "Bearer " + _OldSigner(salt=internal.TOKEN_SALT).sign("r1"),
        "Bearer " + signing.TimestampSigner(salt=internal.TOKEN_SALT).sign("../etc"),
    ],
    ids=["missing", "empty", "garbage", "basic", "tampered", "other-salt", "expired", "bad-node-name"],
)
def test_anything_but_a_valid_token_is_404_and_runs_no_git(repo, git_runs, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    client = Client()

    def answers(repo_id):
        info = client.get(f"/_replication/{repo_id}.git/info/refs?service=git-upload-pack", **extra)
        rpc = client.post(
            f"/_replication/{repo_id}.git/git-upload-pack",
            data=b"0000",
            content_type="application/x-git-upload-pack-request",
            **extra,
        )
        # The not-found page names the path asked for: the same but for the id.
        return [
            (r.status_code, r.content.replace(f"/{repo_id}.git".encode(), b"/ID.git")) for r in (info, rpc)
        ]

    found, missing = answers(repo.pk), answers(999999)
    assert found == missing
    assert all(status == 404 and b"private-work" not in body for status, body in found)
    assert git_runs == []


def test_signed_in_users_and_the_owner_get_404_too(repo, git_runs):
    client = Client()
    client.force_login(repo.owner)
    assert client.get(_refs_url(repo)).status_code == 404
    token = services.token_create(user=repo.owner, scope="write")[1]
    assert Client().get(_refs_url(repo), HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 404
    assert git_runs == []


def test_on_a_replica_the_route_is_404(repo, git_runs, settings):
    settings.HOSTSITE_ROLE = "replica"
    settings.PRIMARY_URL = "http://primary.invalid"
    response = Client().get(_refs_url(repo), HTTP_AUTHORIZATION=f"Bearer {internal.fetch_token('r1')}")
    assert response.status_code == 404
    assert git_runs == []


def test_no_user_can_be_named_like_the_internal_route():
    from django.core.exceptions import ValidationError

    from repos.names import validate_username

    with pytest.raises(ValidationError):
        validate_username("_replication")
