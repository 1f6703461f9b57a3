"""Taken-down content stays down in pushes, tried the way an attacker would: re-publishing a
take-down's commits by pointing a new ref at the id (with an empty pack, or with the objects)
or by building on it. Hiding a workspace blocks nobody else's push. Fetches by id are in
tests/workspaces/test_fetch_oracles.py, the rule's finer cases in test_republishing.py."""

from __future__ import annotations

import pytest

from repos.models import Push, RefUpdate
from tests.factories import UserFactory
from tests.workspaces.rawgit import (
    ZERO,
    empty_pack,
    pkt,
    post,
    served_pack,
    v2_fetch,
)
from workspaces import moderation
from workspaces.models import WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene(world):
    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    alice = world.add("alice")
    world.sha = alice.commit("alice's secret", name="secret.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    world.bob = world.add("bob")
    # bob fetched alice's work while it was public: he holds the objects.
    world.bob.git("fetch", "--quiet", world.bob.remote, "refs/users/alice/feature", check=True)
    world.alice = alice
    world.staff = UserFactory(username="staff", is_staff=True)
    return world


def take_down(scene):
    moderation.do_take_down_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="legal request"
    )


def hide(scene):
    moderation.do_hide_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="spam"
    )


def raw_push(scene, who, sha: str, ref: str) -> bytes:
    body = pkt(f"{ZERO} {sha} {ref}\0 report-status\n") + b"0000" + empty_pack()
    _status, answer = post(scene, "receive-pack", body, who=who)
    return answer


REFUSED = "a moderator took down or blocked"


def test_an_empty_pack_cannot_re_publish_a_taken_down_commit(scene):
    take_down(scene)
    for oid in (scene.sha, scene.sha.upper()):
        answer = raw_push(scene, scene.bob, oid, "refs/users/bob/again")
        # Without side-band the hook's reason is not relayed; the policy itself allows this ref.
        assert b"ng refs/users/bob/again pre-receive hook declined" in answer, answer
    assert "refs/users/bob/again" not in scene.refs()
    assert not RefUpdate.objects.filter(ref="refs/users/bob/again").exists()


def test_pushing_or_building_on_taken_down_work_is_refused(scene):
    take_down(scene)
    bob = scene.bob
    before = Push.objects.count()
    result = bob.push(f"{scene.sha}:refs/users/bob/copy")
    assert result.returncode != 0 and REFUSED in result.stderr, result.stderr
    bob.git("checkout", "--quiet", "-b", "on-top", scene.sha, check=True)
    bob.commit("built on it", name="mine.txt")
    for refspec in ("HEAD:refs/users/bob/on-top", "HEAD:refs/for/main"):
        result = bob.push(refspec)
        assert result.returncode != 0 and REFUSED in result.stderr, (refspec, result.stderr)
    assert Push.objects.count() == before
    refs = scene.refs()
    assert not any(ref.startswith("refs/users/bob/") for ref in refs), refs


def test_hiding_a_workspace_blocks_nobody_elses_push(scene):
    # A hidden workspace is out of sight, not under a legal hold: bob, who fetched alice's
    # work while it was public, may build on it in his own workspace, where it shows as his.
    hide(scene)
    bob = scene.bob
    assert b"ok refs/users/bob/again" in raw_push(scene, bob, scene.sha, "refs/users/bob/again")
    bob.git("checkout", "--quiet", "-b", "on-top", scene.sha, check=True)
    bob.commit("built on it", name="mine.txt")
    result = bob.push("HEAD:refs/users/bob/on-top")
    assert result.returncode == 0, result.stderr
    assert scene.refs()["refs/users/bob/again"] == scene.sha


def test_the_owner_of_a_hidden_workspace_keeps_working_on_it(scene):
    hide(scene)
    scene.alice.commit("more of it", name="secret.txt")
    result = scene.alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode == 0, result.stderr


def test_unrelated_pushes_are_unaffected_and_staff_may_re_publish(scene):
    take_down(scene)
    bob = scene.bob
    bob.git("checkout", "--quiet", "-b", "fresh", "origin/main", check=True)
    bob.commit("unrelated", name="bob.txt")
    assert bob.push("HEAD:refs/users/bob/fresh").returncode == 0
    staff = scene.add("staff2")
    staff.user.is_staff = True
    staff.user.save(update_fields=["is_staff"])
    answer = raw_push(scene, staff, scene.sha, "refs/users/staff2/restored")
    assert b"ok refs/users/staff2/restored" in answer, answer


def test_merged_work_stays_visible_after_a_take_down(scene):
    # What reached main before the take-down is part of the project's history.
    owner = scene.owner
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/feature", check=True)
    owner.git("merge", "--quiet", "--ff-only", "FETCH_HEAD", check=True)
    assert owner.push("HEAD:main").returncode == 0
    take_down(scene)
    assert served_pack(*v2_fetch(scene, scene.sha.upper()))


def test_building_on_someone_elses_visible_workspace_is_allowed(scene):
    # The hook's slow path: the push reaches objects the repository held outside the branches
    # and the pusher's own workspace; they are visible, so the push goes through.
    take_down(scene)
    carol = scene.add("carol")
    carol_sha = carol.commit("carol's work", name="carol.txt")
    assert carol.push("HEAD:refs/users/carol/feature").returncode == 0
    bob = scene.bob
    bob.git("fetch", "--quiet", bob.remote, "refs/users/carol/feature", check=True)
    bob.git("checkout", "--quiet", "-b", "on-carol", carol_sha, check=True)
    bob.commit("on top of carol", name="bob.txt")
    result = bob.push("HEAD:refs/users/bob/on-carol")
    assert result.returncode == 0, result.stderr
    # And pointing a ref at carol's commit itself, with an empty pack.
    assert b"ok refs/users/bob/same" in raw_push(scene, bob, carol_sha, "refs/users/bob/same")


def test_nobody_adds_to_a_taken_down_workspace(scene):
    take_down(scene)
    owner = scene.owner  # the repository's admin
    owner.commit("an admin's addition", name="admin.txt")
    result = owner.push("HEAD:refs/users/alice/added")
    assert result.returncode != 0 and "was taken down by a moderator" in result.stderr, result.stderr
    assert "refs/users/alice/added" not in scene.refs()
