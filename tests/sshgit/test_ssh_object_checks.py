"""Histories from every decade over SSH: the object checks are the ones smart HTTP applies
(repos.objectcheck), so a legacy object is accepted and recorded, and a client-harming one is
refused with nothing left behind, in the same words (tests/repos/test_object_checks_live.py
does the same over HTTP)."""

from __future__ import annotations

import subprocess

import pytest

from repos import services
from repos.models import LegacyObject, Push
from tests.factories import UserFactory
from tests.objectclasses import CASES, build
from tests.repos.livepush import client_env, server_has, server_refs
from tests.sshgit.sshsupport import key_pair, register_key, ssh_url

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

# One of each, pushed by git itself (raw cases need a hand-made pack).
ACCEPTED = next(m for m, c in sorted(CASES.items()) if c.accepted and not c.raw and not c.server_config)
REFUSED = next(m for m, c in sorted(CASES.items()) if not c.accepted and not c.raw and not c.server_config)


@pytest.mark.parametrize("msg_id", [ACCEPTED, REFUSED])
def test_the_object_checks_hold_over_ssh(ssh_git, tmp_path, msg_id):
    case = CASES[msg_id]
    alice = UserFactory(username="alice")
    register_key(alice, key_pair(ssh_git, "alice"))
    repo = services.repository_create(owner=alice, name=f"old-{msg_id.lower()}")
    env = {**client_env(tmp_path / "home"), **ssh_git.git_env(key_pair(ssh_git, "alice"))}
    built = build(case, tmp_path / "work", env)
    target = f"refs/heads/{msg_id}"
    push = subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path / "work"),
            "push",
            ssh_url(ssh_git, repo.full_name),
            f"{built.ref}:{target}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if case.accepted:
        assert push.returncode == 0, push.stderr
        assert f"remote: warning: object {built.bad_oid}: {msg_id}: " in push.stderr
        assert server_refs(repo) == {target: built.tip} and server_has(repo, built.bad_oid)
        assert set(LegacyObject.objects.filter(repository=repo).values_list("oid", "msg_id", "source")) == {
            (built.bad_oid, msg_id, "push")
        }
        assert Push.objects.get(repository=repo).protocol == "ssh"
    else:
        assert push.returncode != 0
        assert msg_id in push.stderr, push.stderr
        assert server_refs(repo) == {} and not server_has(repo, built.bad_oid)
        assert not Push.objects.filter(repository=repo).exists()
