"""Which commits a push introduced (repos.pushes.introduced_commits), observed the way the
pushlog sees them: real pushes to the live server, then the PushCommit rows of each push."""

from __future__ import annotations

import pytest

from repos.models import Push

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def last_push_commits(world) -> list[str]:
    push = Push.objects.filter(repository=world.repo).order_by("-pk").first()
    return list(push.commits.values_list("sha", flat=True))


def test_new_commits_on_a_branch_oldest_first(world):
    owner = world.owner
    first, second = owner.commit("one"), owner.commit("two")
    assert owner.push("main").returncode == 0
    assert last_push_commits(world) == [first, second]


def test_workspace_push_lists_only_what_is_not_canonical_or_already_mine(world):
    alice = world.add("alice")
    mine = alice.commit("alice's work")
    assert alice.push("HEAD:refs/users/alice/a").returncode == 0
    assert last_push_commits(world) == [mine]
    # The same commit under a second name of her own: nothing new.
    assert alice.push("HEAD:refs/users/alice/b").returncode == 0
    assert last_push_commits(world) == []
    # A tag of a commit main already has: nothing new.
    world.owner.git("tag", "v0", world.base_sha, check=True)
    assert world.owner.push("v0").returncode == 0
    assert last_push_commits(world) == []


def test_force_push_lists_the_replacement(world):
    alice = world.add("alice")
    alice.commit("draft")
    assert alice.push("HEAD:refs/users/alice/topic").returncode == 0
    alice.git("commit", "--amend", "--quiet", "-m", "draft, amended", check=True)
    amended = alice.git("rev-parse", "HEAD", check=True).stdout.strip()
    assert alice.push("+HEAD:refs/users/alice/topic").returncode == 0
    assert last_push_commits(world) == [amended]


def test_commit_first_pushed_by_someone_else_stays_with_their_push(world):
    alice, bob = world.add("alice"), world.add("bob")
    shared = alice.commit("alice's change")
    assert alice.push("HEAD:refs/users/alice/change").returncode == 0
    first_push = Push.objects.filter(repository=world.repo).order_by("-pk").first()
    bob.git("fetch", "--quiet", alice.remote, "refs/users/alice/change", check=True)
    bob.git("reset", "--quiet", "--hard", "FETCH_HEAD", check=True)
    own = bob.commit("bob on top")
    assert bob.push("HEAD:refs/users/bob/on-top").returncode == 0
    # bob's push walks past alice's workspace (it is not one of his tips) and lists both;
    # the unique (repository, sha) row keeps alice's commit with her push.
    assert last_push_commits(world) == [own]
    assert list(first_push.commits.values_list("sha", flat=True)) == [shared]
