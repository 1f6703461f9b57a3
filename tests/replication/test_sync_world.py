"""Real histories replicate: objects old tools wrote (each class the object checks accept),
ref names that are not UTF-8, and thousands of refs reach a replica exactly as the primary
holds them, through the same fetch as any push's."""

from __future__ import annotations

import subprocess

import pytest

from gitcore.git import run_git
from replication.sync import CURRENT, FETCHED
from repos import objectcheck
from tests.objectclasses import CASES, build
from tests.replication.support import record

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

MANY_REFS = 3000
NOT_UTF8 = [b"refs/heads/caf\xe9", b"refs/tags/\xff\xfe-release", b"refs/users/alice/\xc3\x28"]


def raw_refs(path) -> bytes:
    """Every ref and what it points at, as git prints them: bytes, whatever the names are."""
    return subprocess.run(
        ["git", "--git-dir", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        check=True,
    ).stdout


def every_object(path) -> set[bytes]:
    out = subprocess.run(
        ["git", "--git-dir", str(path), "cat-file", "--batch-all-objects", "--batch-check"],
        capture_output=True,
        check=True,
    ).stdout
    return set(out.splitlines())


def test_legacy_objects_odd_names_and_many_refs_replicate(world, make_replica, tmp_path, git_home):
    repo = world.repo
    src = tmp_path / "src"
    cases = [case for case in CASES.values() if case.accepted and not case.raw and not case.server_config]
    assert len(cases) >= 5, [case.msg_id for case in cases]  # the decades' usual suspects at least
    built = [build(case, src, git_home) for case in cases]
    # Onto the primary as an import brings them: fetched under the object checks' defaults.
    config = [arg for key, value in objectcheck.git_config("fetch") for arg in ("-c", f"{key}={value}")]
    run_git(
        [
            *config,
            "fetch",
            "--quiet",
            str(src),
            "+refs/heads/case/*:refs/heads/case/*",
            "+refs/tags/*:refs/tags/*",
        ],
        repo=repo.disk_path,
    )
    tip = built[0].tip
    lines = [b"create " + name + b" " + tip.encode() for name in NOT_UTF8]
    lines += [f"create refs/heads/many/{n:05d} {tip}".encode() for n in range(MANY_REFS)]
    subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "update-ref", "--stdin"],
        input=b"\n".join(lines) + b"\n",
        check=True,
        capture_output=True,
    )
    record(repo.pk)

    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    copied = raw_refs(replica.path(repo.pk))
    assert copied == raw_refs(repo.disk_path)
    for name in NOT_UTF8:
        assert name + b" " + tip.encode() in copied.splitlines()
    assert copied.count(b"refs/heads/many/") == MANY_REFS
    # Every object, the odd ones included, is there byte for byte (same ids, types and sizes).
    held = every_object(replica.path(repo.pk))
    assert {b.bad_oid.encode() for b in built} <= {line.split()[0] for line in held}
    assert every_object(repo.disk_path) <= held
    assert replica.sync(repo.pk) == CURRENT
