"""Pull mirrors end to end: the upstream is a repository on the live server (gunicorn), pushed
to with real git; the mirror is another repository that syncs from it over HTTP, by calling the
service or through a real Celery worker. Sync, prune, forced updates, failure, backoff,
notifications, recovery, refused objects, read-only branches and open workspaces."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from notifications.models import Notification
from repos import lifecycle
from repos import services as repo_services
from repos.models import Mirror, Push, RefUpdate, Role
from sources import mirrors
from tests.eager import run_followers
from tests.factories import UserFactory
from tests.gitutil import git
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40
INTERVAL = 10


def refs_of(path, *prefixes: str) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)", *prefixes],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def canonical(path) -> dict[str, str]:
    return refs_of(path, "refs/heads/", "refs/tags/")


def json_pushes(host: str, full_name: str, query: str = "") -> dict:
    with urllib.request.urlopen(f"http://{host}/{full_name}/json-pushes?{query}", timeout=30) as response:
        return json.loads(response.read())


class Scene:
    """owner/project on the live server is the upstream: main, dev, a tag, and what a mirror must
    leave out (a refs/pull/ ref, a workspace). alice/follower follows it."""

    def __init__(self, world, settings):
        settings.IMPORT_ALLOW_PRIVATE_SOURCES = True  # the live server is on loopback
        self.world, self.owner = world, world.owner
        self.upstream = world.repo
        owner = self.owner
        owner.git("checkout", "--quiet", "-b", "dev", check=True)
        owner.commit("dev work", name="dev.txt")
        owner.git("checkout", "--quiet", "main", check=True)
        owner.git("tag", "-a", "v1", "-m", "release 1", check=True)
        assert owner.push("dev", "v1", "HEAD:refs/users/owner/wip").returncode == 0
        git(
            world.env,
            "--git-dir",
            str(self.upstream.disk_path),
            "update-ref",
            "refs/pull/1/head",
            world.base_sha,
        )
        self.alice = UserFactory(username="alice")
        self.repo = repo_services.repository_create(owner=self.alice, name="follower")
        self.url = f"http://{world.host}/{self.upstream.full_name}.git"
        self.mirror = mirrors.mirror_create(
            repo=self.repo, url=self.url, created_by=self.alice, interval_minutes=INTERVAL
        )

    def sync(self, expect: str) -> mirrors.SyncResult:
        result = mirrors.sync_mirror(self.mirror)
        assert result.outcome == expect, result
        self.mirror.refresh_from_db()
        return result

    def upstream_canonical(self) -> dict[str, str]:
        return canonical(self.upstream.disk_path)


@pytest.fixture
def scene(world, settings):
    return Scene(world, settings)


def test_sync_brings_branches_and_tags_then_new_commits_prunes_and_forced_updates(scene):
    owner, host = scene.owner, scene.world.host
    first = scene.sync("synced")
    assert canonical(scene.repo.disk_path) == scene.upstream_canonical()
    assert set(refs_of(scene.repo.disk_path)) == {"refs/heads/main", "refs/heads/dev", "refs/tags/v1"}
    push = Push.objects.get(pk=first.push_id)
    assert (push.pusher, push.pusher_name, push.protocol) == (None, "mirror", "mirror")
    assert {u.ref: (u.old, u.forced) for u in push.ref_updates.all()} == {
        "refs/heads/main": (ZERO, False),
        "refs/heads/dev": (ZERO, False),
        "refs/tags/v1": (ZERO, False),
    }
    assert scene.mirror.last_success_at and scene.mirror.consecutive_failures == 0
    assert (
        timedelta(minutes=INTERVAL - 1)
        < scene.mirror.next_sync_at - timezone.now()
        <= timedelta(minutes=INTERVAL)
    )

    scene.sync("unchanged")  # nothing moved upstream: nothing recorded
    assert Push.objects.filter(repository=scene.repo).count() == 1

    old_main = scene.upstream_canonical()["refs/heads/main"]
    new_main = owner.commit("upstream moves on")
    assert owner.push("main").returncode == 0
    second = scene.sync("synced")
    entry = json_pushes(host, scene.repo.full_name)[str(second.push_id)]
    assert entry["user"] == "mirror" and entry["changesets"] == [new_main]
    assert entry["refs"] == [{"ref": "refs/heads/main", "old": old_main, "new": new_main, "forced": False}]

    dev = scene.upstream_canonical()["refs/heads/dev"]
    assert owner.push(":dev").returncode == 0
    pruned = scene.sync("synced")
    assert "refs/heads/dev" not in canonical(scene.repo.disk_path)
    assert list(RefUpdate.objects.filter(push_id=pruned.push_id).values_list("ref", "old", "new")) == [
        ("refs/heads/dev", dev, ZERO)
    ]

    # The upstream rewrites a branch: recorded as a forced update, never silently.
    owner.git("checkout", "--quiet", "-b", "topic", check=True)
    owner.commit("topic", name="topic.txt")
    assert owner.push("topic").returncode == 0
    scene.sync("synced")
    before = scene.upstream_canonical()["refs/heads/topic"]
    owner.git("commit", "--quiet", "--amend", "-m", "topic, rewritten", check=True)
    assert owner.push("--force", "topic").returncode == 0
    rewritten = scene.sync("synced")
    after = scene.upstream_canonical()["refs/heads/topic"]
    assert canonical(scene.repo.disk_path)["refs/heads/topic"] == after
    entry = json_pushes(host, scene.repo.full_name)[str(rewritten.push_id)]
    assert entry["refs"] == [{"ref": "refs/heads/topic", "old": before, "new": after, "forced": True}]


def test_an_unreachable_upstream_keeps_every_ref_backs_off_notifies_once_and_recovers(scene, monkeypatch):
    run_followers(monkeypatch)  # the syncs run here: so do the notices their status change enqueues
    admin, reader = UserFactory(username="adam"), UserFactory(username="rita")
    repo_services.membership_set(repo=scene.repo, user=admin, role=Role.ADMIN)
    repo_services.membership_set(repo=scene.repo, user=reader, role=Role.READER)
    scene.sync("synced")
    kept = refs_of(scene.repo.disk_path)
    staff = UserFactory(username="staff", is_staff=True)
    lifecycle.repository_soft_delete(repo=scene.upstream, acting_user=scene.owner.user)  # no longer served

    failed = scene.sync("failed")
    assert failed.error and scene.mirror.last_error == failed.error and "credentials" in failed.error
    assert refs_of(scene.repo.disk_path) == kept
    assert scene.mirror.consecutive_failures == 1
    wait = scene.mirror.next_sync_at - timezone.now()
    assert timedelta(minutes=2 * INTERVAL - 1) < wait <= timedelta(minutes=2 * INTERVAL)
    page = Client().get("/alice/follower").content.decode()
    assert "Sync failing since" in page and "1 attempt" in page

    scene.sync("failed")
    assert scene.mirror.consecutive_failures == 2
    wait = scene.mirror.next_sync_at - timezone.now()
    assert timedelta(minutes=4 * INTERVAL - 1) < wait <= timedelta(minutes=4 * INTERVAL)
    assert refs_of(scene.repo.disk_path) == kept

    failing = Notification.objects.filter(kind="mirror_failing")
    assert sorted(failing.values_list("user__username", flat=True)) == [
        "adam",
        "alice",
    ]  # once each, admins only
    assert (
        "alice/follower" in failing.first().text and failing.first().url == "/alice/follower/settings/mirror"
    )

    lifecycle.repository_restore(repo=scene.upstream, acting_user=staff)
    scene.sync("unchanged")
    assert (scene.mirror.consecutive_failures, scene.mirror.last_error) == (0, "")
    assert sorted(
        Notification.objects.filter(kind="mirror_recovered").values_list("user__username", flat=True)
    ) == ["adam", "alice"]
    assert Notification.objects.filter(kind="mirror_failing").count() == 2


def test_an_upstream_listing_no_branches_deletes_nothing(scene):
    scene.sync("synced")
    kept = refs_of(scene.repo.disk_path)
    for ref in refs_of(scene.upstream.disk_path, "refs/heads/"):
        git(scene.world.env, "--git-dir", str(scene.upstream.disk_path), "update-ref", "-d", ref)
    failed = scene.sync("failed")
    assert "lists no branches" in failed.error and "refusing to delete every branch" in failed.error
    assert refs_of(scene.repo.disk_path) == kept
    assert Push.objects.filter(repository=scene.repo).count() == 1


def test_a_refused_object_upstream_fails_the_sync_with_the_rule(scene):
    scene.sync("synced")
    kept = refs_of(scene.repo.disk_path)
    env, bare = scene.world.env, str(scene.upstream.disk_path)

    def stdin_git(*args: str, data: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", bare, *args], input=data, capture_output=True, text=True, env=env, check=True
        ).stdout.strip()

    blob = stdin_git("hash-object", "-w", "--stdin", data="[core]\n")
    # A tree with a `.git` entry: a checkout would write into the repository's own metadata.
    tree = stdin_git("mktree", data=f"100644 blob {blob}\t.git\n")
    commit = git(env, "--git-dir", bare, "commit-tree", tree, "-m", "evil", check=True).stdout.strip()
    git(env, "--git-dir", bare, "update-ref", "refs/heads/evil", commit)

    failed = scene.sync("failed")
    assert "hasDotgit" in failed.error and "refused" in failed.error
    assert refs_of(scene.repo.disk_path) == kept
    missing = subprocess.run(
        ["git", "--git-dir", str(scene.repo.disk_path), "cat-file", "-e", commit], capture_output=True
    )
    assert missing.returncode != 0


def test_branches_read_only_workspaces_open_and_cleanup_follows_the_upstream(scene, celery_worker_process):
    world = scene.world
    scene.sync("synced")
    main = canonical(scene.repo.disk_path)["refs/heads/main"]
    alice_token = repo_services.token_create(user=scene.alice, scope="write")[1]
    alice_url = f"http://alice:{alice_token}@{world.host}/alice/follower.git"
    alice_work = world.tmp / "alice-work"
    git(world.env, "clone", "--quiet", alice_url, str(alice_work))
    (alice_work / "admin.txt").write_text("an admin's direct change\n")
    git(world.env, "add", "admin.txt", cwd=alice_work)
    git(world.env, "commit", "--quiet", "-m", "direct", cwd=alice_work)
    refused = git(world.env, "push", "origin", "HEAD:main", cwd=alice_work, check=False)
    assert refused.returncode != 0 and "mirrors an upstream" in refused.stderr
    assert canonical(scene.repo.disk_path)["refs/heads/main"] == main

    # A contributor's workspace on the mirror works as on any repository.
    bob = UserFactory(username="bob")
    bob_token = repo_services.token_create(user=bob, scope="write")[1]
    bob_work = world.tmp / "bob-work"
    git(
        world.env,
        "clone",
        "--quiet",
        f"http://bob:{bob_token}@{world.host}/alice/follower.git",
        str(bob_work),
    )
    (bob_work / "fix.txt").write_text("bob's fix\n")
    git(world.env, "add", "fix.txt", cwd=bob_work)
    git(world.env, "commit", "--quiet", "-m", "fix", cwd=bob_work)
    fix = git(world.env, "rev-parse", "HEAD", cwd=bob_work).stdout.strip()
    pushed = git(world.env, "push", "origin", "HEAD:refs/users/bob/fix", cwd=bob_work, check=False)
    assert pushed.returncode == 0, pushed.stderr

    # The upstream's maintainer takes bob's commit as it is; the next sync (run by the worker)
    # brings it to the mirror's main, and merged-ref cleanup archives bob's ref.
    owner = scene.owner
    owner.git("fetch", "--quiet", f"http://{world.host}/alice/follower.git", "refs/users/bob/fix", check=True)
    owner.git("merge", "--quiet", "--ff-only", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    mirrors.mirror_sync_request(mirror=scene.mirror, actor=scene.alice)
    wait_until(
        lambda: "refs/users/bob/fix" not in refs_of(scene.repo.disk_path, "refs/users/"),
        timeout=90,
        what="the sync to archive bob's merged ref",
        alive=celery_worker_process,
    )
    assert canonical(scene.repo.disk_path)["refs/heads/main"] == fix
    synced = Push.objects.filter(repository=scene.repo, protocol="mirror").latest("pk")
    assert list(synced.ref_updates.values_list("ref", "old", "new", "forced")) == [
        ("refs/heads/main", main, fix, False)
    ]
    assert Mirror.objects.get(pk=scene.mirror.pk).claimed_at is None
