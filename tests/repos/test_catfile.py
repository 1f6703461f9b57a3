"""gitcore.catfile against real repositories: answers, missing and oversized objects, a process
that dies, threads sharing one, names that are not UTF-8, refs that move, and a repository
replaced at the same path; and the raw object parsers beside it (gitcore.gitobjects)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from gitcore import catfile, gitobjects
from repos import browse, history


class _Out:
    def __init__(self, stdout: bytes):
        self.stdout = stdout.decode("utf-8", "surrogateescape")


def git(env: dict[str, str], *args: str, input: bytes | None = None) -> _Out:
    """Client-side git with bytes in (names that are not UTF-8) and text out."""
    proc = subprocess.run(["git", *args], env=env, input=input, capture_output=True, check=True, timeout=120)
    return _Out(proc.stdout)


def _bare(tmp_path, git_home, name="r.git"):
    path = tmp_path / name
    git(git_home, "init", "--quiet", "--bare", "-b", "main", str(path))
    return path


def _commit(git_home, repo, files: dict[bytes, bytes], message="c", parent=None, ref="refs/heads/main"):
    """A commit of `files` (byte names, any bytes) written with plumbing, `ref` moved to it."""
    entries = b""
    for name, data in sorted(files.items()):
        blob = git(
            git_home, "--git-dir", str(repo), "hash-object", "-w", "--stdin", input=data
        ).stdout.strip()
        entries += b"100644 blob " + blob.encode() + b"\t" + name + b"\0"
    tree = git(git_home, "--git-dir", str(repo), "mktree", "-z", input=entries).stdout.strip()
    args = ["--git-dir", str(repo), "commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    sha = git(git_home, *args).stdout.strip()
    git(git_home, "--git-dir", str(repo), "update-ref", ref, sha)
    return sha


@pytest.fixture(autouse=True)
def _fresh_pool():
    catfile.close_all()
    yield
    catfile.close_all()


def test_answers_objects_and_refs_and_none_for_what_names_nothing(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    sha = _commit(git_home, repo, {b"a.txt": b"hello\n"})
    assert catfile.resolve(repo, "refs/heads/main") == sha
    assert catfile.resolve(repo, sha[:7]) == sha
    tree = catfile.resolve(repo, sha, "tree")
    assert tree and catfile.info(repo, tree).type == "tree"
    found = catfile.read(repo, f"{sha}:a.txt")
    assert found is not None and found[0].type == "blob" and found[1] == b"hello\n"
    for nothing in ("refs/heads/nope", "0" * 40, f"{sha}:missing.txt", "main\nrefs/heads/main", "", "-x"):
        assert catfile.resolve(repo, nothing) is None
        assert catfile.info(repo, nothing) is None
    # After questions that named nothing the process is still in step.
    assert catfile.read(repo, f"{sha}:a.txt")[1] == b"hello\n"


def test_a_blob_over_the_limit_is_not_read_and_the_next_question_still_works(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    big = os.urandom(3 * 1024 * 1024)
    sha = _commit(git_home, repo, {b"big.bin": big, b"small.txt": b"s\n"})
    blob = catfile.info(repo, f"{sha}:big.bin").oid
    with pytest.raises(catfile.TooLarge) as exc:
        browse.read_blob(repo, blob, limit=1024 * 1024)
    assert exc.value.info.size == len(big)
    assert catfile.read(repo, f"{sha}:small.txt")[1] == b"s\n"
    assert browse.read_blob(repo, blob) == big  # no limit: all of it, in step after it


def test_a_dead_process_is_replaced(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    sha = _commit(git_home, repo, {b"a.txt": b"a\n"})
    assert catfile.resolve(repo, "refs/heads/main") == sha
    assert catfile.open_processes() >= 1
    pids = [p.pid for proc in catfile._pool.open.values() for p in proc.procs.values()]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    assert catfile.read(repo, f"{sha}:a.txt")[1] == b"a\n"
    now = [p.pid for proc in catfile._pool.open.values() for p in proc.procs.values()]
    assert now and not set(now) & set(pids)


def test_threads_share_a_process_and_each_gets_its_own_answer(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    files = {f"f{i}.txt".encode(): (f"{i}\n" * (i + 1)).encode() for i in range(40)}
    sha = _commit(git_home, repo, files)
    errors: list[str] = []

    def reader(offset: int) -> None:
        for n in range(150):
            name = f"f{(n + offset) % 40}.txt"
            found = catfile.read(repo, f"{sha}:{name}")
            if found is None or found[1] != files[name.encode()]:
                errors.append(name)
            entry = browse.entry_at(repo, sha, name)
            if entry is None or entry.size != len(files[name.encode()]):
                errors.append(f"size of {name}")

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert catfile.open_processes() == 1


def test_names_that_are_not_utf8_list_and_resolve(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    sha = _commit(git_home, repo, {b"caf\xe9.txt": b"latin-1 name\n", b"ok.txt": b"ok\n"})
    tree = browse.entry_at(repo, sha, "")
    names = [e.path for e in browse.list_tree(repo, tree.sha, "")]
    assert names == ["caf\udce9.txt", "ok.txt"]
    entry = browse.entry_at(repo, sha, "caf\udce9.txt")
    assert entry is not None and browse.read_blob(repo, entry.sha) == b"latin-1 name\n"
    assert browse.entry_at(repo, sha, "caf\u00e9.txt") is None  # the UTF-8 spelling is another name


def test_refs_are_read_again_on_every_question(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    first = _commit(git_home, repo, {b"a.txt": b"1\n"})
    assert catfile.resolve(repo, "refs/heads/main") == first
    second = _commit(git_home, repo, {b"a.txt": b"2\n"}, parent=first)
    assert catfile.resolve(repo, "refs/heads/main") == second
    git(git_home, "--git-dir", str(repo), "pack-refs", "--all")
    third = _commit(git_home, repo, {b"a.txt": b"3\n"}, parent=second)
    assert catfile.resolve(repo, "refs/heads/main") == third
    git(git_home, "--git-dir", str(repo), "update-ref", "-d", "refs/heads/main")
    assert catfile.resolve(repo, "refs/heads/main") is None


def test_a_repository_replaced_at_the_same_path_is_never_read_through_the_old_process(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    old = _commit(git_home, repo, {b"secret.txt": b"old\n"})
    assert catfile.read(repo, f"{old}:secret.txt")[1] == b"old\n"
    shutil.rmtree(repo)
    repo = _bare(tmp_path, git_home)
    new = _commit(git_home, repo, {b"new.txt": b"new\n"})
    assert catfile.read(repo, f"{old}:secret.txt") is None
    assert catfile.read(repo, f"{new}:new.txt")[1] == b"new\n"


def test_commit_detail_decodes_the_declared_encoding_and_skips_signatures():
    raw = (
        b"tree " + b"a" * 40 + b"\nparent " + b"b" * 40 + b"\nparent " + b"c" * 40 + b"\n"
        b"author Ren\xe9 <r@example.invalid> 1700000000 +0100\n"
        b"committer C <c@example.invalid> 1700000100 +0000\n"
        b"encoding ISO-8859-1\n"
        b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n"
        b"\nSubject \xe9\n\nBody\n"
    )
    commit = gitobjects.parse_commit(raw)
    assert commit.parents == ("b" * 40, "c" * 40)
    assert gitobjects.split_ident(commit.author) == ("René", "r@example.invalid", 1700000000)
    assert commit.message == "Subject é\n\nBody\n"


def test_commit_detail_matches_git_log(tmp_path, git_home):
    repo = _bare(tmp_path, git_home)
    first = _commit(git_home, repo, {b"a": b"1"}, message="one\n\nbody line")
    second = _commit(git_home, repo, {b"a": b"2"}, message="two", parent=first)
    detail = history.commit_detail(repo, second)
    logged = history.log(repo, second, limit=1)[0]
    assert detail == logged
    assert history.commit_detail(repo, first).body == "body line"


def test_an_idle_process_is_closed_and_a_later_question_starts_another(tmp_path, git_home, monkeypatch):
    repo = _bare(tmp_path, git_home)
    sha = _commit(git_home, repo, {b"a.txt": b"a\n"})
    assert catfile.resolve(repo, "refs/heads/main") == sha
    monkeypatch.setattr(catfile, "IDLE_SECONDS", 0.0)
    deadline = time.monotonic() + 10
    while catfile.open_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert catfile.open_processes() == 0  # the watchdog closed it, untouched
    assert catfile.read(repo, f"{sha}:a.txt")[1] == b"a\n"


def test_a_commit_with_two_author_headers_reads_as_git_log_shows_it(tmp_path, git_home):
    """Old importers wrote such commits; git log shows the last of each (dulwich the first)."""
    repo = _bare(tmp_path, git_home)
    tree = git(
        git_home, "-C", str(repo), "hash-object", "-t", "tree", "-w", "--stdin", input=b""
    ).stdout.strip()
    raw = (
        f"tree {tree}\nauthor A <a@example.invalid> 1 +0000\nauthor B <b@example.invalid> 2 +0000\n"
        "committer C <c@example.invalid> 3 +0000\ncommitter D <d@example.invalid> 4 +0000\n\nmsg\n"
    ).encode()
    args = ["-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin", "--literally"]
    oid = git(git_home, *args, input=raw).stdout.strip()
    shown = git(git_home, "-C", str(repo), "log", "-1", "--format=%an|%ae|%cn|%ce", oid).stdout.strip()
    _info, data = catfile.read(repo, oid)
    commit = gitobjects.parse_commit(data)
    author, committer = gitobjects.split_ident(commit.author), gitobjects.split_ident(commit.committer)
    assert f"{author[0]}|{author[1]}|{committer[0]}|{committer[1]}" == shown
