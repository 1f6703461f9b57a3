"""The git pipeline (repos.pipeline) driven directly, as every transport drives it: a GitCall and
a request body in, git's answer out, with no server in between. Real git on a real repository;
the live transports' own tests (smart HTTP, SSH, replication) cover the wire."""

from __future__ import annotations

import io

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections

from gitcore import pktline
from gitcore.git import run_git
from repos import pipeline, services
from repos.gitprotocol import Pusher
from repos.models import DailyTransfer
from tests.factories import UserFactory
from tests.gitutil import make_history
from workspaces import moderation

pytestmark = pytest.mark.django_db

V2 = "version=2"


@pytest.fixture(autouse=True)
def _connection_kept():
    """A response's close() says the request finished, and Django then closes the database
    connection, the test's own; its test client holds the same signal off the same way."""
    request_finished.disconnect(close_old_connections)
    yield
    request_finished.connect(close_old_connections)


@pytest.fixture
def repo(tmp_path, git_home):
    """A public repository with main, a tag, and a workspace taken down: nobody but staff and
    a replica may see its commit."""
    owner, mallory = UserFactory(username="owner"), UserFactory(username="mallory")
    staff = UserFactory(username="staff", is_staff=True)
    repo = services.repository_create(owner=owner, name="pipe")
    refs = make_history(tmp_path / "work", git_home)
    fetched = ["refs/heads/trunk:refs/heads/main", "refs/tags/v1.0:refs/tags/v1.0"]
    fetched.append("refs/heads/feature:refs/users/mallory/work")
    run_git(["fetch", "--quiet", str(tmp_path / "work"), *fetched], repo=repo.disk_path)
    moderation.do_take_down_workspace(repo=repo, user=mallory, acting_user=staff, reason="notice")
    repo.feature = refs["refs/heads/feature"]
    return repo


def v2_request(command: str, *args: str) -> io.BytesIO:
    body = pktline.encode(f"command={command}\n") + pktline.encode("object-format=sha1\n") + pktline.DELIM
    body += b"".join(pktline.encode(f"{arg}\n") for arg in args) + pktline.FLUSH
    return io.BytesIO(body)


def answer_of(response) -> bytes:
    """The whole answer, streamed or not; closing a streamed one runs its on-exit steps."""
    try:
        return b"".join(response) if response.streaming else response.content
    finally:
        response.close()


def transferred(repo) -> tuple[int, int]:
    row = DailyTransfer.objects.filter(repository=repo).first()
    return (row.git_bytes, row.git_requests) if row else (0, 0)


def test_a_public_fetch_lists_what_the_public_sees_and_is_counted(repo):
    call = pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2)
    answer = answer_of(pipeline.rpc(call, body=v2_request("ls-refs", "ref-prefix refs/"), gzip=False))
    assert b"refs/heads/main" in answer and b"refs/tags/v1.0" in answer
    assert b"refs/takedown/" not in answer
    assert transferred(repo) == (len(answer), 1)


def test_a_replica_fetches_every_ref_uncounted(repo):
    call = pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2, transport=pipeline.REPLICA)
    answer = answer_of(pipeline.rpc(call, body=v2_request("ls-refs", "ref-prefix refs/"), gzip=False))
    assert b"refs/takedown/" in answer and b"refs/heads/main" in answer
    assert transferred(repo) == (0, 0)


def test_a_hidden_want_is_answered_as_an_unknown_id_before_git_runs(repo):
    call = pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2)
    unknown = answer_of(pipeline.rpc(call, body=v2_request("fetch", "want " + "1" * 40, "done"), gzip=False))
    hidden = answer_of(
        pipeline.rpc(call, body=v2_request("fetch", "want " + repo.feature, "done"), gzip=False)
    )
    assert b"not our ref" in unknown
    assert hidden == unknown.replace(b"1" * 40, repo.feature.encode())
    # The replica's fetch of the same id is served.
    replica = pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2, transport=pipeline.REPLICA)
    served = answer_of(
        pipeline.rpc(replica, body=v2_request("fetch", "want " + repo.feature, "done"), gzip=False)
    )
    assert b"packfile" in served


def test_the_advertisement_of_a_replica_is_git_s_own_and_the_public_one_is_written(repo):
    public = pipeline.advertise(pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2))
    replica = pipeline.advertise(
        pipeline.GitCall(repo, "upload-pack", Pusher(None, None), V2, transport=pipeline.REPLICA)
    )
    assert not public.streaming and replica.streaming
    ours, theirs = answer_of(public), answer_of(replica)
    assert ours.startswith(pktline.encode("version 2\n")) and theirs.startswith(pktline.encode("version 2\n"))
