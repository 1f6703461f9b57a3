"""Deleted, renamed and transferred repositories as git clients see them, against the live
server (issue 8)."""

from __future__ import annotations

import pytest

from repos import lifecycle, services
from repos.models import Repository, Visibility
from tests.factories import UserFactory
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def url(world, user=None, path=None) -> str:
    path = path or world.repo.full_name
    if user is None:
        return f"http://{world.host}/{path}.git"
    return f"http://{user.username}:{user.token}@{world.host}/{path}.git"


def clone(world, remote, target):
    return git(world.env, "clone", "--quiet", "--bare", remote, str(world.tmp / target), check=False)


def test_deleted_repository_is_404_to_git_but_for_staff_and_restore_brings_it_back(world):
    reader = world.add("reader", "reader")
    staff = world.add("staffer")
    staff.user.is_staff = True
    staff.user.save(update_fields=["is_staff"])
    lifecycle.repository_soft_delete(repo=world.repo, acting_user=world.owner.user)

    anonymous = clone(world, url(world), "anon")
    # 401: git asks for credentials (and cannot here), as for any repository it may not see.
    assert anonymous.returncode != 0 and "could not read Username" in anonymous.stderr
    for who in (world.owner, reader):
        result = clone(world, url(world, who), f"c-{who.username}")
        assert result.returncode != 0 and "Repository not found" in result.stderr, result.stderr
    # Nobody pushes to it, staff included.
    push = staff.git("push", url(world, staff), "HEAD:refs/heads/staff")
    assert push.returncode != 0
    assert clone(world, url(world, staff), "staff").returncode == 0

    lifecycle.repository_restore(repo=Repository.objects.get(pk=world.repo.pk), acting_user=staff.user)
    assert clone(world, url(world), "anon-after").returncode == 0
    assert clone(world, url(world, reader), "reader-after").returncode == 0


def test_clone_and_fetch_follow_a_rename_and_a_transfer(world):
    old_remote = url(world)
    contributor = world.add("contrib")
    old_sha = world.base_sha
    lifecycle.repository_move(repo=world.repo, acting_user=world.owner.user, new_name="renamed")

    result = clone(world, old_remote, "after-rename")
    assert result.returncode == 0, result.stderr
    got = git(world.env, "--git-dir", str(world.tmp / "after-rename"), "rev-parse", "main").stdout.strip()
    assert got == old_sha

    # A clone made before the rename keeps fetching from its old remote URL.
    new_sha = world.owner.commit("after rename")
    push = world.owner.git("push", url(world, world.owner, "owner/renamed"), "HEAD:main")
    assert push.returncode == 0, push.stderr
    fetch = contributor.git("fetch", "origin")
    assert fetch.returncode == 0, fetch.stderr
    assert contributor.git("rev-parse", "origin/main").stdout.strip() == new_sha

    # Transfer: the acting admin takes it; the chain of old names leads to owner2/renamed.
    new_owner = UserFactory(username="owner2")
    lifecycle.repository_move(
        repo=Repository.objects.get(pk=world.repo.pk), acting_user=new_owner, new_owner=new_owner
    )
    assert clone(world, old_remote, "after-transfer").returncode == 0
    assert contributor.git("fetch", "origin").returncode == 0
    # Pushing through an old name works too: git follows info/refs' redirect for the push.
    world.owner.commit("third")
    assert world.owner.git("push", url(world, world.owner, "owner/project"), "HEAD:main").returncode == 0


def test_private_renamed_repository_redirects_git_only_with_credentials(world):
    reader = world.add("reader", "reader")
    outsider = world.add("outsider")
    services.repository_update(repo=world.repo, visibility=Visibility.PRIVATE)
    lifecycle.repository_move(repo=world.repo, acting_user=world.owner.user, new_name="hidden")
    anonymous = clone(world, url(world, path="owner/project"), "anon")
    assert anonymous.returncode != 0 and "could not read Username" in anonymous.stderr
    result = clone(world, url(world, outsider, "owner/project"), "outsider-clone")
    assert result.returncode != 0 and "Repository not found" in result.stderr
    result = clone(world, url(world, reader, "owner/project"), "reader-clone")
    assert result.returncode == 0, result.stderr
