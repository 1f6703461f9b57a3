"""Ref names that are not UTF-8, pushed with git itself to the live server: creating or moving
one is refused with one `remote: hostsite:` line naming its bytes as `\\xNN` escapes, never a
traceback or a server path, and nothing changes; deleting one that an import brought works
for whoever may delete it, and the pushlog records it as it records such names (U+FFFD).
Over SSH: tests/sshgit/test_ssh_refusals.py."""

from __future__ import annotations

import os
import subprocess
import urllib.request

import pytest

from gitcore.git import run_git
from repos.models import Push

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40


def push(pusher, *refspecs: bytes) -> tuple[int, str]:
    """git push with refspecs as bytes; (exit status, stderr with its bytes escaped)."""
    result = subprocess.run(
        [b"git", b"push", pusher.remote.encode(), *refspecs],
        cwd=pusher.work,
        env=pusher.env,
        capture_output=True,
        timeout=120,
    )
    return result.returncode, result.stderr.decode("utf-8", "backslashreplace")


def refs(world) -> bytes:
    return run_git(["for-each-ref", "--format=%(objectname) %(refname)"], repo=world.repo.disk_path).stdout


def clean(stderr: str) -> bool:
    return "Traceback" not in stderr and 'File "' not in stderr and ".hooks" not in stderr


REFUSED = [
    ("owner", b"refs/heads/bad\xff\xfe"),
    ("owner", b"refs/tags/v1.0-\xe9"),
    ("owner", b"refs/users/owner/caf\xe9"),
    ("alice", b"refs/users/alice/caf\xe9"),
    ("alice", b"refs/for/main/\xff"),
    ("alice", b"refs/heads/mine\xc3\x28"),
]


@pytest.mark.parametrize(
    "who,ref", REFUSED, ids=[ref.decode("utf-8", "backslashreplace") for _, ref in REFUSED]
)
def test_a_push_of_a_name_that_is_not_utf8_is_refused_in_one_clear_line(world, who, ref):
    pusher = world.owner if who == "owner" else world.add("alice")
    pusher.commit("work")
    before, recorded = refs(world), Push.objects.filter(repository=world.repo).count()
    status, stderr = push(pusher, b"HEAD:" + ref)
    assert status != 0
    escaped = ref.decode("utf-8", "backslashreplace")
    said = [line.strip() for line in stderr.splitlines() if "hostsite:" in line]
    assert said == [
        f"remote: hostsite: {escaped} is not UTF-8 (\\xNN marks each byte that is not); push it under a UTF-8 name"
    ], stderr
    assert clean(stderr), stderr
    assert refs(world) == before
    assert Push.objects.filter(repository=world.repo).count() == recorded


@pytest.mark.parametrize("protocol", ["0", "2"])
def test_a_repository_holding_such_names_is_cloned_with_them(world, tmp_path, protocol):
    for name in (b"refs/heads/caf\xe9", b"refs/tags/\xff\xfe-rel"):  # as an import left them
        run_git(["update-ref", os.fsdecode(name), world.base_sha], repo=world.repo.disk_path)
    clone = tmp_path / "clone"
    url = f"http://{world.host}/{world.repo.full_name}.git"
    # A plain clone: in v2 its ls-refs asks for HEAD, branches and tags, which the server
    # answers from its cache keyed by the ref files' names.
    result = subprocess.run(
        ["git", "-c", f"protocol.version={protocol}", "clone", "--quiet", url, str(clone)],
        env=world.env,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    listed = ["git", "-C", str(clone), "for-each-ref", "--format=%(refname)"]
    cloned = set(subprocess.run(listed, capture_output=True, check=True).stdout.split())
    assert {b"refs/remotes/origin/caf\xe9", b"refs/tags/\xff\xfe-rel"} <= cloned, cloned


def test_an_imported_name_that_is_not_utf8_is_deleted_by_a_push_and_recorded(world):
    name = b"refs/heads/caf\xe9"
    reader = world.add("rita", role="reader")
    run_git(["update-ref", os.fsdecode(name), world.base_sha], repo=world.repo.disk_path)  # as imported
    # A reader's branch push goes to her workspace, where there is no such ref to delete.
    status, stderr = push(reader, b":" + name)
    assert status != 0 and clean(stderr), stderr
    assert "refs/users/rita/caf\\xe9 does not exist; nothing to delete" in stderr
    assert name in refs(world)

    status, stderr = push(world.owner, b":" + name)
    assert status == 0 and clean(stderr), stderr
    assert name not in refs(world)
    deletion = Push.objects.filter(repository=world.repo).latest("pk")
    assert [(u.ref, u.old, u.new) for u in deletion.ref_updates.all()] == [
        ("refs/heads/caf\ufffd", world.base_sha, ZERO)
    ]
    with urllib.request.urlopen(f"http://{world.host}/{world.repo.full_name}/pushlog", timeout=30) as page:
        assert page.status == 200 and "refs/heads/caf\ufffd" in page.read().decode()
