"""git clone, push and archive through the real sshd and gateway, both protocol versions."""

from __future__ import annotations

import subprocess

import pytest

from repos.models import Push
from sshgit.models import PublicKey

pytestmark = pytest.mark.django_db(transaction=True)


def _register(user, pair) -> PublicKey:
    return PublicKey.objects.create(
        user=user,
        title="laptop",
        key_type=pair.key_type,
        key_data=pair.key_data,
        fingerprint=pair.fingerprint,
    )


def _git(env, *args, cwd=None):
    return subprocess.run(["git", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version", ["0", "2"])
def test_clone_push_archive_over_ssh(ssh_git, world, git_home, tmp_path, version):
    pair = ssh_git.make_key(f"owner-{version}")
    _register(world.owner.user, pair)
    env = {**git_home, **ssh_git.git_env(pair)}
    url = f"ssh://{ssh_git.user}@{ssh_git.host}/owner/project.git"
    clone = _git(env, "-c", f"protocol.version={version}", "clone", url, str(tmp_path / "c"))
    assert clone.returncode == 0, clone.stderr
    assert "hostsite" not in clone.stderr  # nothing of ours on the terminal of a plain clone
    work = tmp_path / "c"
    _git(env, "commit", "--allow-empty", "-m", "over ssh", cwd=work)
    push = _git(env, "-c", f"protocol.version={version}", "push", "origin", "HEAD:main", cwd=work)
    assert push.returncode == 0, push.stderr
    head = _git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()
    assert world.refs()["refs/heads/main"] == head
    assert Push.objects.filter(repository=world.repo, protocol="ssh").count() == 1
    archive = subprocess.run(
        ["git", "archive", "--remote", url, "--format=tar", "main"], env=env, capture_output=True, timeout=60
    )
    assert archive.returncode == 0, archive.stderr
    assert len(archive.stdout) >= 1024
    missing = _git(env, "ls-remote", f"ssh://{ssh_git.user}@{ssh_git.host}/owner/nothere.git")
    assert missing.returncode != 0
    assert "hostsite: repository 'owner/nothere' not found, or this key has no access to it" in missing.stderr
