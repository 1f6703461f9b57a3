"""A push that sends no pack (only a deletion) over SSH: the client keeps its side of the channel
open and waits for the report, so the command list must reach git without the request's end
(it hung in a pipe's buffer before; bench/ssh.py found it)."""

from __future__ import annotations

import subprocess

import pytest

from repos.models import Push
from sshgit.models import PublicKey

pytestmark = pytest.mark.django_db(transaction=True)


def _git(env, *args, cwd=None):
    return subprocess.run(["git", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_delete_only_push_over_ssh(ssh_git, world, git_home, tmp_path):
    pair = ssh_git.make_key("deleter")
    PublicKey.objects.create(
        user=world.owner.user,
        title="laptop",
        key_type=pair.key_type,
        key_data=pair.key_data,
        fingerprint=pair.fingerprint,
    )
    env = {**git_home, **ssh_git.git_env(pair)}
    url = f"ssh://{ssh_git.user}@{ssh_git.host}/owner/project.git"
    work = tmp_path / "c"
    assert _git(env, "clone", url, str(work)).returncode == 0
    created = _git(env, "push", "origin", "HEAD:refs/heads/doomed", cwd=work)
    assert created.returncode == 0, created.stderr
    assert "refs/heads/doomed" in world.refs()

    deleted = _git(env, "push", "origin", ":refs/heads/doomed", cwd=work)  # hung before the fix

    assert deleted.returncode == 0, deleted.stderr
    assert "refs/heads/doomed" not in world.refs()
    assert Push.objects.filter(repository=world.repo, protocol="ssh").count() == 2
