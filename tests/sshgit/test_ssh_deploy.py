"""Deploy keys over SSH: a repository's key reaches that repository only; a read-only key
clones, a read-write key pushes (recorded under the admin who added it), and a deploy key of
a deleted repository stops working."""

from __future__ import annotations

import subprocess

import pytest

from repos import lifecycle, services
from repos.models import Push, RefUpdate, Role
from tests.factories import UserFactory
from tests.sshgit.sshsupport import commit, git, hostsite_lines, key_pair, register_deploy_key, ssh_url

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene(world, ssh_git, git_home):
    """owner/secret and owner/other, private, both with the world's history."""
    owner = world.owner
    for name in ("secret", "other"):
        repo = services.repository_create(owner=owner.user, name=name, visibility="private")
        url = f"http://owner:{owner.token}@{world.host}/owner/{name}.git"
        assert git(git_home, "push", url, "main", cwd=owner.work).returncode == 0
        setattr(world, name, repo)
    return world


def _env(ssh_git, git_home, pair):
    return {**git_home, **ssh_git.git_env(pair)}


def test_read_only_key_clones_its_repository_only(scene, ssh_git, git_home, tmp_path):
    pair = key_pair(ssh_git, "deploy-ro")
    register_deploy_key(scene.secret, pair, created_by=scene.owner.user, read_write=False)
    env = _env(ssh_git, git_home, pair)
    work = tmp_path / "c"
    clone = git(env, "clone", "--quiet", ssh_url(ssh_git, "owner/secret"), str(work))
    assert clone.returncode == 0, clone.stderr
    assert git(env, "rev-parse", "HEAD", cwd=work).stdout.strip() == scene.base_sha

    before = git(env, "ls-remote", ssh_url(ssh_git, "owner/secret")).stdout
    commit(env, work, "from ci")
    push = git(env, "push", "origin", "HEAD:main", cwd=work)
    assert push.returncode != 0
    assert hostsite_lines(push.stderr) == ["hostsite: this deploy key is read-only"]
    assert git(env, "ls-remote", ssh_url(ssh_git, "owner/secret")).stdout == before
    assert not Push.objects.filter(repository=scene.secret, protocol="ssh").exists()

    # Another repository of the same owner, a public one, and one that does not exist: all
    # "not found", in the same words.
    for name in ("owner/other", "owner/project", "owner/nothere"):
        result = git(env, "ls-remote", ssh_url(ssh_git, name))
        assert result.returncode != 0
        assert hostsite_lines(result.stderr) == [
            f"hostsite: repository '{name}' not found, or this key has no access to it"
        ], result.stderr
    # Nor does it open a shell: the greeting names the repository and the key.
    greeted = ssh_git.ssh(pair, "-T", stdin=subprocess.DEVNULL)
    assert "Hi owner/secret (deploy key 'ci')!" in greeted.stderr, greeted.stderr


def test_read_write_key_pushes_as_the_admin_who_added_it(scene, ssh_git, git_home, tmp_path):
    admin = UserFactory(username="ops")
    services.membership_set(repo=scene.secret, user=admin, role=Role.ADMIN)
    pair = key_pair(ssh_git, "deploy-rw")
    register_deploy_key(scene.secret, pair, created_by=admin, read_write=True)
    env = _env(ssh_git, git_home, pair)
    work = tmp_path / "c"
    assert git(env, "clone", "--quiet", ssh_url(ssh_git, "owner/secret"), str(work)).returncode == 0
    sha = commit(env, work, "release bump")
    push = git(env, "push", "origin", "HEAD:main", "HEAD:refs/tags/v1", cwd=work)
    assert push.returncode == 0, push.stderr
    pushed = Push.objects.get(repository=scene.secret, protocol="ssh")
    assert (pushed.pusher, pushed.pusher_name) == (admin, "ops")
    assert sorted(RefUpdate.objects.filter(push=pushed).values_list("ref", "new")) == [
        ("refs/heads/main", sha),
        ("refs/tags/v1", sha),
    ]
    # Still that repository only, for pushes too.
    other = git(env, "push", ssh_url(ssh_git, "owner/other"), "HEAD:main", cwd=work)
    assert other.returncode != 0
    assert "hostsite: repository 'owner/other' not found, or this key has no access to it" in other.stderr

    # The admin made a maintainer: the key's pushes were the admin's, so they end too.
    services.membership_set(repo=scene.secret, user=admin, role=Role.MAINTAINER)
    commit(env, work, "after the admin stepped down")
    stepped_down = git(env, "push", "origin", "HEAD:main", cwd=work)
    assert stepped_down.returncode != 0
    assert hostsite_lines(stepped_down.stderr) == [
        "hostsite: the account that added this deploy key no longer administers this repository; "
        "an admin must add it again"
    ]
    services.membership_set(repo=scene.secret, user=admin, role=Role.ADMIN)

    # The admin's account deactivated: the key still reads, and pushes are refused saying why.
    admin.is_active = False
    admin.save(update_fields=["is_active"])
    commit(env, work, "after the admin left")
    refused = git(env, "push", "origin", "HEAD:main", cwd=work)
    assert refused.returncode != 0
    assert hostsite_lines(refused.stderr) == [
        "hostsite: the account that added this deploy key is no longer active; an admin must add it again"
    ]
    assert git(env, "fetch", "--quiet", "origin", cwd=work).returncode == 0


def test_a_deleted_repositorys_deploy_key_stops_working(scene, ssh_git, git_home):
    pair = key_pair(ssh_git, "deploy-del")
    register_deploy_key(scene.secret, pair, created_by=scene.owner.user, read_write=True)
    env = _env(ssh_git, git_home, pair)
    assert git(env, "ls-remote", ssh_url(ssh_git, "owner/secret")).returncode == 0
    lifecycle.repository_soft_delete(repo=scene.secret, acting_user=scene.owner.user)
    refused = git(env, "ls-remote", ssh_url(ssh_git, "owner/secret"))
    assert refused.returncode != 0
    assert "Permission denied (publickey)" in refused.stderr, refused.stderr
    # Restored, it works again: the key was kept, not deleted.
    staff = UserFactory(username="staff", is_staff=True)
    lifecycle.repository_restore(repo=scene.secret, acting_user=staff)
    assert git(env, "ls-remote", ssh_url(ssh_git, "owner/secret")).returncode == 0


def test_a_deploy_key_follows_its_renamed_repository_with_the_same_notice(scene, ssh_git, git_home, tmp_path):
    pair = key_pair(ssh_git, "deploy-mv")
    register_deploy_key(scene.secret, pair, created_by=scene.owner.user, read_write=True)
    env = _env(ssh_git, git_home, pair)
    lifecycle.repository_move(repo=scene.secret, acting_user=scene.owner.user, new_name="renamed")
    work = tmp_path / "c"
    cloned = git(env, "clone", "--quiet", ssh_url(ssh_git, "owner/secret"), str(work))
    assert cloned.returncode == 0, cloned.stderr
    assert hostsite_lines(cloned.stderr) == [
        "hostsite: owner/secret is now owner/renamed; update your remote's URL"
    ]
    sha = commit(env, work, "after the rename")
    pushed = git(env, "push", "--quiet", "origin", "HEAD:main", cwd=work)
    assert pushed.returncode == 0, pushed.stderr
    assert git(env, "ls-remote", ssh_url(ssh_git, "owner/renamed"), "main").stdout.startswith(sha)
