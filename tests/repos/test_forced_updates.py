"""Forced ref updates (not fast-forwards) are recorded and shown as such: on the RefUpdate rows,
in json-pushes, the Atom feed, the API and the webhook payload. Real git throughout; the last
test force-pushes through the live server."""

from __future__ import annotations

import json
import urllib.request

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import pushes, webhooks
from repos.models import Push, RefUpdate
from repos.pushes import Update
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git

ZERO = "0" * 40


class History:
    """A working copy whose branches are fetched into a hosted repository's disk (no hooks)."""

    def __init__(self, tmp_path, env):
        self.env = env
        self.owner = UserFactory(username="olga")
        self.repo = RepositoryFactory(owner=self.owner, name="proj")
        self.work = tmp_path / "work"
        git(env, "init", "--quiet", "-b", "main", str(self.work))
        self.base = self.commit("base")

    def commit(self, message: str) -> str:
        path = self.work / "file.txt"
        path.write_text((path.read_text() if path.exists() else "") + message + "\n")
        git(self.env, "add", "file.txt", cwd=self.work)
        git(self.env, "commit", "--quiet", "-m", message, cwd=self.work)
        return self.rev("HEAD")

    def rev(self, spec: str) -> str:
        return git(self.env, "rev-parse", spec, cwd=self.work).stdout.strip()

    def publish(self) -> None:
        """Copy every object and branch of the working copy into the hosted repository."""
        git(
            self.env,
            "--git-dir",
            str(self.repo.disk_path),
            "fetch",
            "--quiet",
            str(self.work),
            "+refs/*:refs/keep/*",
        )


@pytest.fixture
def history(tmp_path, git_home):
    return History(tmp_path, git_home)


@pytest.mark.django_db
def test_is_forced_for_each_kind_of_update(history):
    h = history
    first = h.commit("one")
    second = h.commit("two")
    git(h.env, "reset", "--quiet", "--hard", first, cwd=h.work)
    rewritten = h.commit("two, rewritten")
    git(h.env, "tag", "-a", "annotated", "-m", "tag", second, cwd=h.work)
    git(h.env, "tag", "-a", "annotated-later", "-m", "tag", rewritten, cwd=h.work)
    tree = h.rev("HEAD^{tree}")
    git(h.env, "tag", "-a", "on-a-tree", "-m", "tag of a tree", tree, cwd=h.work)
    h.publish()
    path = h.repo.disk_path
    tag = h.rev("refs/tags/annotated")
    assert pushes.is_forced(path, first, second) is False  # a fast-forward
    assert pushes.is_forced(path, second, rewritten) is True  # a rewrite
    assert pushes.is_forced(path, second, first) is True  # a rewind
    assert pushes.is_forced(path, ZERO, second) is False  # created
    assert pushes.is_forced(path, second, ZERO) is False  # deleted
    assert pushes.is_forced(path, second, second) is False
    # Annotated tags compare by the commits they point at.
    assert pushes.is_forced(path, h.base, tag) is False
    assert pushes.is_forced(path, tag, h.rev("refs/tags/annotated-later")) is True
    # Objects that are no commits cannot fast-forward: forced, never silently ordinary.
    assert pushes.is_forced(path, tag, h.rev("refs/tags/on-a-tree")) is True


@pytest.mark.django_db
def test_forced_updates_are_recorded_and_shown_everywhere(history):
    h = history
    first = h.commit("one")
    git(h.env, "branch", "old-one", cwd=h.work)
    git(h.env, "reset", "--quiet", "--hard", h.base, cwd=h.work)
    rewritten = h.commit("one, rewritten")
    h.publish()
    push = pushes.push_record(
        repo=h.repo,
        pusher=h.owner,
        updates=[
            Update(h.base, first, "refs/heads/main"),
            Update(first, rewritten, "refs/heads/feature"),
            Update(ZERO, first, "refs/heads/new"),
            Update(first, ZERO, "refs/heads/gone"),
        ],
    )
    flags = dict(RefUpdate.objects.filter(push=push).values_list("ref", "forced"))
    assert flags == {
        "refs/heads/main": False,
        "refs/heads/feature": True,
        "refs/heads/new": False,
        "refs/heads/gone": False,
    }

    expected = {
        "refs/heads/main": False,
        "refs/heads/feature": True,
        "refs/heads/new": False,
        "refs/heads/gone": False,
    }
    body = Client().get("/olga/proj/json-pushes").json()
    assert {r["ref"]: r["forced"] for r in body[str(push.pk)]["refs"]} == expected
    api = APIClient().get(f"/api/v1/repos/olga/proj/pushes/{push.pk}").json()
    assert {r["ref"]: r["forced"] for r in api["refs"]} == expected
    payload = webhooks.payload_for(Push.objects.get(pk=push.pk))
    assert {r["ref"]: r["forced"] for r in payload["push"]["refs"]} == expected
    atom = Client().get("/olga/proj/pushlog.atom").content.decode()
    assert "refs/heads/feature (forced)" in atom and "refs/heads/main (forced)" not in atom


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_a_force_push_over_http_is_recorded_as_forced(world):
    owner = world.owner
    owner.git("checkout", "--quiet", "-b", "topic", check=True)
    owner.commit("topic one")
    assert owner.push("topic").returncode == 0
    owner.git("commit", "--quiet", "--amend", "-m", "topic one, amended", check=True)
    result = owner.push("--force", "topic")
    assert result.returncode == 0, result.stderr
    forced_push = Push.objects.filter(repository=world.repo).latest("pk")
    owner.git("checkout", "--quiet", "main", check=True)
    owner.commit("main moves on")
    assert owner.push("main").returncode == 0
    plain_push = Push.objects.filter(repository=world.repo).latest("pk")

    url = f"http://{world.host}/{world.repo.full_name}/json-pushes?startID={forced_push.pk - 1}"
    with urllib.request.urlopen(url, timeout=30) as response:
        body = json.loads(response.read())
    assert body[str(forced_push.pk)]["refs"][0] | {"old": "", "new": ""} == {
        "ref": "refs/heads/topic",
        "old": "",
        "new": "",
        "forced": True,
    }
    assert body[str(plain_push.pk)]["refs"][0]["forced"] is False
