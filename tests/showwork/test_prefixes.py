"""Short hashes: one width for the view, unique among all objects, never a branch or tag name."""

from __future__ import annotations

import hashlib
import itertools
import subprocess

import pytest
from django.contrib.auth.models import AnonymousUser

from showwork import prefixes
from showwork.selection import select
from tests.gitutil import git
from tests.showwork.lab import DAY, NOW, Lab

pytestmark = pytest.mark.django_db


def _object_with_prefix(kind: str, make, prefix: str) -> bytes:
    """Content whose object id starts with `prefix` (about 16**len(prefix) tries)."""
    for i in itertools.count():
        body = make(i)
        if hashlib.sha1(f"{kind} {len(body)}\0".encode() + body).hexdigest().startswith(prefix):  # noqa: S324
            return body
    raise AssertionError("unreachable")


def _hash_object(lab: Lab, kind: str, body: bytes) -> str:
    return (
        subprocess.run(
            ["git", "--git-dir", lab.bare, "hash-object", "-t", kind, "-w", "--stdin"],
            input=body,
            capture_output=True,
            check=True,
            env=lab.env,
        )
        .stdout.decode()
        .strip()
    )


@pytest.fixture
def lab(tmp_path, git_home) -> Lab:
    lab = Lab(tmp_path, git_home)
    lab.main = lab.commit("base", at=NOW - 5 * DAY)
    lab.publish("refs/heads/main")
    lab.draft = lab.commit("draft one", at=NOW - DAY)
    lab.publish("refs/users/alice/one")
    return lab


def _shorts(lab):
    graph = select(lab.repo, viewer=AnonymousUser(), now=NOW)
    return {n.sha: n.short for n in graph.nodes}


def test_one_common_width_at_least_four(lab):
    shorts = _shorts(lab)
    assert {len(s) for s in shorts.values()} == {4}
    assert all(sha.startswith(short) for sha, short in shorts.items())


def test_a_blob_sharing_the_prefix_lengthens_the_width(lab):
    body = _object_with_prefix("blob", lambda i: f"filler {i}\n".encode(), lab.draft[:4])
    blob = _hash_object(lab, "blob", body)
    assert blob[:4] == lab.draft[:4]
    shorts = _shorts(lab)
    width = len(shorts[lab.draft])
    assert width >= 5 and not blob.startswith(shorts[lab.draft])  # unique in the whole repository
    assert {len(s) for s in shorts.values()} == {width}  # one width for every node


def test_two_draft_commits_sharing_four_characters(lab):
    tree = git(lab.env, "--git-dir", lab.bare, "rev-parse", f"{lab.draft}^{{tree}}").stdout.strip()
    stamp = f"Bob <bob@example.invalid> {NOW - DAY} +0000"

    def commit_body(i: int) -> bytes:
        return f"tree {tree}\nparent {lab.main}\nauthor {stamp}\ncommitter {stamp}\n\ncollide {i}\n".encode()

    other = _hash_object(lab, "commit", _object_with_prefix("commit", commit_body, lab.draft[:4]))
    git(lab.env, "--git-dir", lab.bare, "update-ref", "refs/users/bob/twin", other)
    shorts = _shorts(lab)
    assert other[:4] == lab.draft[:4] and other in shorts
    assert shorts[other] != shorts[lab.draft] and len(shorts[other]) >= 5
    assert prefixes.candidates(lab.repo.disk_path, lab.draft[:4]) == sorted([lab.draft, other])


def test_a_branch_named_like_a_prefix_lengthens_it(lab):
    width = len(_shorts(lab)[lab.draft])
    lab.publish(f"refs/heads/{lab.draft[:width]}", lab.main)
    shorts = _shorts(lab)
    assert len(shorts[lab.draft]) == width + 1
    lab.publish(f"refs/tags/{lab.draft[: width + 1]}", lab.main)
    assert len(_shorts(lab)[lab.draft]) == width + 2


def test_common_width_rules():
    assert prefixes.common_width(["abcd"], [], [], ["abcdef12"]) == 4
    assert prefixes.common_width(["abcd", "12345"], [], [], ["abcdef12", "12345678"]) == 5
    assert prefixes.common_width(["abcd"], ["abcd", "abcde"], ["nothex"], ["abcdef12"]) == 6


def test_candidates_rejects_bad_prefixes(lab):
    assert prefixes.candidates(lab.repo.disk_path, "abc") is None
    assert prefixes.candidates(lab.repo.disk_path, "zzzz") is None
    assert prefixes.candidates(lab.repo.disk_path, lab.draft[:12].upper()) == [lab.draft]
