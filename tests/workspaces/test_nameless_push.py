"""Nameless push through proc-receive: refs/for/<branch>[/<topic>] lands in the workspace."""

import pytest

from repos.models import Push, RefUpdate

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_nameless_push_creates_then_advances(world):
    alice = world.add("alice")
    first = alice.commit("feature part 1")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    name = f"refs/users/alice/main/{first[:12]}"
    assert world.refs()[name] == first
    assert name in result.stdout  # git prints the ref the server chose
    # The push was recorded under the real ref.
    update = RefUpdate.objects.filter(push__repository=world.repo).latest("id")
    assert (update.ref, update.new) == (name, first)
    assert update.push.touches_workspace

    second = alice.commit("feature part 2")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs[name] == second  # advanced, not a second head
    assert [r for r in refs if r.startswith("refs/users/alice/")] == [name]


def test_unrelated_work_gets_a_new_head(world):
    alice = world.add("alice")
    one = alice.commit("one")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    alice.git("checkout", "--quiet", "-b", "other", world.base_sha, check=True)
    two = alice.commit("two", name="other.txt")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    refs = world.refs()
    assert refs[f"refs/users/alice/main/{one[:12]}"] == one
    assert refs[f"refs/users/alice/main/{two[:12]}"] == two


def test_topic_from_path_and_from_push_option(world):
    alice = world.add("alice")
    one = alice.commit("topic work")
    result = alice.push("HEAD:refs/for/main/fix-typo")
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/fix-typo"] == one
    two = alice.commit("more")
    result = alice.push("HEAD:refs/for/main", options=["topic=better-docs"])
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/better-docs"] == two


def test_missing_target_branch_and_delete_are_refused(world):
    alice = world.add("alice")
    alice.commit("x")
    result = alice.push("HEAD:refs/for/no-such-branch")
    assert result.returncode != 0
    assert "no branch 'no-such-branch'" in result.stdout + result.stderr
    result = alice.push(":refs/for/main")
    assert result.returncode != 0
    assert "refs/for/main cannot be deleted" in result.stderr
    assert not [r for r in world.refs() if r.startswith("refs/users/alice/")]
    assert not Push.objects.filter(repository=world.repo, pusher=alice.user).exists()
