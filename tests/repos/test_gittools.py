"""gitcore.gittools and gitcore.git.stream_git against real repositories built in tmp_path."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from gitcore.git import GitError, GitTimeout, run_git, stream_git
from gitcore.gittools import (
    ZERO_OID,
    ZERO_OID_SHA256,
    RefTransaction,
    RefTransactionFailed,
    count_refs,
    disambiguate,
    is_ancestor,
    is_zero,
    list_refs,
    merge_base,
    ref_exists,
    ref_map,
    rev_parse,
    text_ref_map,
    text_refname,
    zero_like,
)
from tests.gitutil import git, make_history

# A ref name git accepts (any byte but NUL, control characters and a few ASCII signs) that is
# not UTF-8: "café" in Latin-1.
LATIN1_REF = b"refs/heads/caf\xe9"


@pytest.fixture
def repo(tmp_path, git_home) -> tuple[Path, dict[str, str]]:
    """A SHA-1 repository (trunk, feature, annotated tag v1.0): its git dir and ref -> sha."""
    refs = make_history(tmp_path / "work", git_home)
    return tmp_path / "work" / ".git", refs


@pytest.fixture
def sha256_repo(tmp_path, git_home) -> Path:
    path = tmp_path / "sha256"
    git(git_home, "init", "--quiet", "--object-format=sha256", "--initial-branch=main", str(path))
    (path / "a.txt").write_text("a\n")
    git(git_home, "add", "a.txt", cwd=path)
    git(git_home, "commit", "--quiet", "-m", "first", cwd=path)
    git(git_home, "tag", "-a", "v1", "-m", "one", cwd=path)
    return path / ".git"


def _raw_refs(git_dir: Path) -> bytes:
    """Every ref and its value as git prints them, bytes untouched."""
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        check=True,
    ).stdout


def test_zero_ids_of_both_hashes():
    assert is_zero(ZERO_OID) and is_zero(ZERO_OID_SHA256)
    assert not is_zero("") and not is_zero(None) and not is_zero("0" * 39 + "1")
    assert zero_like("ab" * 32) == ZERO_OID_SHA256
    assert zero_like("ab" * 20) == ZERO_OID


def test_rev_parse(repo):
    path, refs = repo
    assert rev_parse(path, "trunk") == refs["refs/heads/trunk"]
    assert rev_parse(path, "refs/heads/feature") == refs["refs/heads/feature"]
    tag = refs["refs/tags/v1.0"]
    assert rev_parse(path, "v1.0") == refs["refs/heads/trunk"]  # peeled to its commit
    assert rev_parse(path, "v1.0", peel=None) == tag
    tree = run_git(["rev-parse", "trunk^{tree}"], repo=path).text.strip()
    assert rev_parse(path, "trunk", peel="tree") == tree
    assert rev_parse(path, tree) is None  # a tree is not a commit
    assert rev_parse(path, "nothing-here") is None
    assert rev_parse(path, "--all") is None  # never read as an option
    assert rev_parse(path, refs["refs/heads/trunk"][:7]) == refs["refs/heads/trunk"]


def test_ref_exists(repo):
    path, _refs = repo
    assert ref_exists(path, "refs/heads/trunk")
    assert ref_exists(path, "refs/tags/v1.0")
    assert not ref_exists(path, "trunk")  # a full name only
    assert not ref_exists(path, "refs/heads/nothing")


def test_merge_base_and_ancestry(repo, git_home):
    path, refs = repo
    trunk, feature = refs["refs/heads/trunk"], refs["refs/heads/feature"]
    assert merge_base(path, trunk, feature) == trunk
    assert merge_base(path, feature, trunk) == trunk
    assert is_ancestor(path, trunk, feature)
    assert not is_ancestor(path, feature, trunk)
    assert is_ancestor(path, trunk, trunk)

    work = path.parent
    git(git_home, "checkout", "--quiet", "--orphan", "island", cwd=work)
    git(git_home, "commit", "--quiet", "--allow-empty", "-m", "unrelated", cwd=work)
    island = rev_parse(path, "island")
    assert merge_base(path, trunk, island) is None
    assert not is_ancestor(path, trunk, island)


def test_list_refs_fields(repo, git_home):
    path, refs = repo
    git(git_home, "symbolic-ref", "refs/heads/alias", "refs/heads/trunk", cwd=path.parent)
    entries = {e.name: e for e in list_refs(path, "refs/heads/", "refs/tags/")}
    assert list(entries) == sorted(entries)
    assert set(entries) == {"refs/heads/alias", "refs/heads/feature", "refs/heads/trunk", "refs/tags/v1.0"}
    assert entries["refs/heads/alias"].symref == "refs/heads/trunk"
    assert entries["refs/heads/alias"].oid == refs["refs/heads/trunk"]
    assert entries["refs/heads/trunk"].symref == "" and entries["refs/heads/trunk"].peeled == ""
    tag = entries["refs/tags/v1.0"]
    assert (tag.oid, tag.peeled) == (refs["refs/tags/v1.0"], refs["refs/heads/trunk"])
    assert ref_map(path, "refs/tags/") == {"refs/tags/v1.0": refs["refs/tags/v1.0"]}
    assert list_refs(path, "refs/nothing/") == []


def test_ref_map_reads_no_object(repo):
    path, _refs = repo
    ghost = "0123456789" * 4  # a ref to an object the repository lacks (a damaged repository)
    (path / "refs" / "heads" / "ghost").write_text(ghost + "\n")
    assert ref_map(path, "refs/heads/")["refs/heads/ghost"] == ghost
    with pytest.raises(GitError, match="missing object"):
        list_refs(path, "refs/heads/")  # peeling needs every object


def test_count_refs(repo):
    path, _refs = repo
    assert count_refs(path, "refs/heads/") == 2
    assert count_refs(path, "refs/users/") == 0


def test_non_utf8_names_round_trip(repo):
    path, refs = repo
    trunk = refs["refs/heads/trunk"]
    subprocess.run(["git", "--git-dir", str(path), "update-ref", LATIN1_REF, trunk.encode()], check=True)
    (name,) = [e.name for e in list_refs(path, "refs/heads/caf*")]
    assert os.fsencode(name) == LATIN1_REF  # the bytes survive, escaped
    assert text_refname(name) == "refs/heads/caf\ufffd"
    assert text_ref_map(path, "refs/heads/caf*") == {"refs/heads/caf\ufffd": trunk}
    # The escaped name addresses the ref again; the text one does not.
    assert ref_exists(path, name) and rev_parse(path, name) == trunk
    assert not ref_exists(path, text_refname(name))
    assert not RefTransaction(path).delete(text_refname(name), old=trunk).try_commit()
    RefTransaction(path).delete(name, old=trunk).commit()
    assert LATIN1_REF not in _raw_refs(path)


def test_transaction_moves_every_ref_or_none(repo):
    path, refs = repo
    trunk, feature = refs["refs/heads/trunk"], refs["refs/heads/feature"]
    before = _raw_refs(path)
    tx = (
        RefTransaction(path)
        .update("refs/heads/trunk", feature, old=trunk)  # would succeed alone
        .create("refs/heads/new", trunk)
        .delete("refs/heads/feature", old=trunk)  # wrong old value: the whole transaction fails
    )
    assert len(tx) == 3
    with pytest.raises(RefTransactionFailed) as failed:
        tx.commit()
    assert "refs/heads/feature" in failed.value.stderr
    assert _raw_refs(path) == before

    assert not RefTransaction(path).create("refs/heads/trunk", feature).try_commit()  # exists
    assert not RefTransaction(path).update("refs/heads/bad name", trunk).try_commit()
    assert _raw_refs(path) == before

    assert (
        RefTransaction(path)
        .update("refs/heads/trunk", feature, old=trunk)
        .create("refs/users/a/x", trunk)
        .try_commit()
    )
    assert ref_map(path, "refs/heads/trunk", "refs/users/") == {
        "refs/heads/trunk": feature,
        "refs/users/a/x": trunk,
    }


def test_transaction_zero_old_means_absent(repo):
    path, refs = repo
    trunk = refs["refs/heads/trunk"]
    assert not RefTransaction(path).update("refs/heads/trunk", trunk, old=ZERO_OID).try_commit()
    assert RefTransaction(path).update("refs/heads/fresh", trunk, old=ZERO_OID).try_commit()
    assert rev_parse(path, "refs/heads/fresh") == trunk


def test_transaction_does_not_follow_symrefs(repo, git_home):
    path, _refs = repo
    git(git_home, "symbolic-ref", "refs/heads/alias", "refs/heads/trunk", cwd=path.parent)
    RefTransaction(path).delete("refs/heads/alias").commit()
    assert ref_exists(path, "refs/heads/trunk") and not ref_exists(path, "refs/heads/alias")


def test_transaction_refuses_line_breaks_before_git(repo):
    path, refs = repo
    tx = RefTransaction(path).update("refs/heads/x\ncreate refs/heads/y", refs["refs/heads/trunk"])
    with pytest.raises(ValueError):
        tx.commit()
    assert not ref_exists(path, "refs/heads/y")
    RefTransaction(path).commit()  # empty: nothing to do, no git


def test_sha256_repository(sha256_repo):
    path = sha256_repo
    entries = {e.name: e for e in list_refs(path)}
    head = entries["refs/heads/main"].oid
    assert len(head) == 64 and len(entries["refs/tags/v1"].oid) == 64
    assert entries["refs/tags/v1"].peeled == head
    assert rev_parse(path, "v1") == head
    assert merge_base(path, head, "v1") == head
    zero = zero_like(head)
    assert is_zero(zero) and zero == ZERO_OID_SHA256
    assert not RefTransaction(path).update("refs/heads/main", head, old=zero).try_commit()
    RefTransaction(path).update("refs/heads/copy", head, old=zero).commit()
    with pytest.raises(RefTransactionFailed):
        RefTransaction(path).delete("refs/heads/copy", old=entries["refs/tags/v1"].oid).commit()
    RefTransaction(path).delete("refs/heads/copy", old=head).commit()
    assert count_refs(path, "refs/heads/") == 1


def test_disambiguate(repo):
    path, refs = repo
    trunk = refs["refs/heads/trunk"]
    found = disambiguate(path, trunk[:4])
    assert trunk in found and all(oid.startswith(trunk[:4]) for oid in found)
    every = run_git(
        ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"], repo=path
    ).text.split()
    unused = next(p for p in (f"{n:04x}" for n in range(65536)) if not any(o.startswith(p) for o in every))
    assert disambiguate(path, unused) == []


# --- stream_git ------------------------------------------------------------------------------------


def _reaped(pid: int) -> bool:
    """True when the child is gone and waited for (not a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)  # a zombie would be reaped here, a live child answer (0, 0)
    except ChildProcessError:
        return True
    return False


def test_stream_reads_the_whole_output(repo):
    path, refs = repo
    expected = run_git(["cat-file", "-p", refs["refs/heads/trunk"]], repo=path).stdout
    with stream_git(["cat-file", "-p", refs["refs/heads/trunk"]], repo=path) as stream:
        data = stream.stdout.read()
        stream.check()
    assert data == expected and stream.proc.returncode == 0


def test_stream_deadline_kills_a_waiting_git(repo):
    path, _refs = repo
    started = time.monotonic()
    with stream_git(["cat-file", "--batch"], repo=path, stdin=subprocess.PIPE, timeout=0.5) as stream:
        assert stream.stdout.read() == b""  # git waits on stdin until the deadline kills it
        with pytest.raises(GitTimeout):
            stream.check()
    assert time.monotonic() - started < 10
    assert _reaped(stream.proc.pid)


def test_stream_leaving_early_kills_and_reaps(repo):
    path, _refs = repo

    class Leave(Exception):
        pass

    with (
        pytest.raises(Leave),
        stream_git(["cat-file", "--batch"], repo=path, stdin=subprocess.PIPE, timeout=60) as stream,
    ):
        assert stream.proc.poll() is None
        raise Leave
    assert stream.proc.returncode is not None
    assert _reaped(stream.proc.pid)


def test_stream_failure_raises_with_stderr(repo):
    path, _refs = repo
    with stream_git(["cat-file", "-p", "no-such-object"], repo=path) as stream:
        assert stream.stdout.read() == b""
        with pytest.raises(GitError) as failed:
            stream.check()
    assert not isinstance(failed.value, GitTimeout)
    assert failed.value.returncode != 0
    assert "no-such-object" in failed.value.stderr
