"""gitcore.gitdiff and render.diffs' parser against real repositories: statuses, renames, binary files, odd names, caps."""

from __future__ import annotations

import pytest

from gitcore import gitdiff
from tests.gitutil import git


@pytest.fixture
def repo(tmp_path, git_home):
    path = tmp_path / "work"
    git(git_home, "init", "--quiet", "-b", "main", str(path))

    def commit(files: dict[str, bytes | None], message: str = "change") -> str:
        for name, content in files.items():
            target = path / name
            if content is None:
                git(git_home, "rm", "--quiet", "--", name, cwd=path)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            git(git_home, "add", "--", name, cwd=path)
        git(git_home, "commit", "--quiet", "--allow-empty", "-m", message, cwd=path)
        return git(git_home, "rev-parse", "HEAD", cwd=path).stdout.strip()

    commit.git_dir = path / ".git"
    commit.path = path
    commit.env = git_home
    return commit


def by_path(result):
    return {f.path: f for f in result.files}


def test_root_commit_diffs_against_the_empty_tree(repo):
    head = repo({"a.txt": b"one\ntwo\n"})
    result = gitdiff.diff(repo.git_dir, None, head)
    (f,) = result.files
    assert (f.status, f.old_path, f.new_path, f.additions, f.deletions) == ("added", None, "a.txt", 2, 0)
    assert [(line.kind, line.text, line.old, line.new) for line in f.hunks[0].lines] == [
        ("add", "one", None, 1),
        ("add", "two", None, 2),
    ]
    assert result.stat() == "1 file changed, 2 insertions(+)" and not result.truncated


def test_statuses_renames_binary_modes_and_line_numbers(repo):
    body = b"".join(b"line %d\n" % i for i in range(40))
    base = repo({"keep.txt": b"a\nb\nc\n", "gone.txt": b"bye\n", "old name.txt": body, "img.bin": b"\0\1\2"})
    (repo.path / "old name.txt").rename(repo.path / "new name.txt")
    git(repo.env, "add", "-A", cwd=repo.path)
    (repo.path / "keep.txt").chmod(0o755)
    head = repo({"keep.txt": b"a\n-- b\nc\n", "gone.txt": None, "img.bin": b"\0\1\3"})
    files = by_path(gitdiff.diff(repo.git_dir, base, head))
    keep = files["keep.txt"]
    assert (
        keep.status == "modified"
        and keep.mode_changed
        and (keep.old_mode, keep.new_mode) == ("100644", "100755")
    )
    # "-- b" as an added line and "b" as a deleted one: the hunk counts, not the text, decide.
    assert [(line.kind, line.text, line.old, line.new) for line in keep.hunks[0].lines] == [
        ("context", "a", 1, 1),
        ("del", "b", 2, None),
        ("add", "-- b", None, 2),
        ("context", "c", 3, 3),
    ]
    assert files["gone.txt"].status == "deleted" and files["gone.txt"].new_path is None
    moved = files["new name.txt"]
    assert (moved.status, moved.old_path, moved.similarity, moved.hunks) == (
        "renamed",
        "old name.txt",
        100,
        [],
    )
    assert files["img.bin"].binary and not files["img.bin"].hunks


def test_odd_file_names_are_unquoted(repo):
    base = repo({"plain": b"x\n"})
    names = ["tab\there.txt", 'quote "q".txt', "ünï cödé.txt", "<img src=x onerror=alert(1)>.txt"]
    head = repo({name: b"hi\n" for name in names})
    assert sorted(by_path(gitdiff.diff(repo.git_dir, base, head))) == sorted(names)


def test_no_newline_at_end_is_a_note(repo):
    base = repo({"a": b"x"})
    head = repo({"a": b"y"})
    (f,) = gitdiff.diff(repo.git_dir, base, head).files
    assert [line.kind for line in f.hunks[0].lines] == ["del", "note", "add", "note"]
    assert (f.additions, f.deletions) == (1, 1)


def test_caps_files_bytes_and_lines(repo):
    base = repo({"seed": b"0\n"})
    head = repo({f"f{i:02d}.txt": b"".join(b"%d\n" % n for n in range(100)) for i in range(10)})
    few = gitdiff.diff(repo.git_dir, base, head, max_files=3)
    assert few.truncated and few.reason == "files" and len(few.files) == 3
    small = gitdiff.diff(repo.git_dir, base, head, max_bytes=2000)
    assert small.truncated and small.reason == "bytes" and small.files[-1].truncated
    assert len(small.files) < 10
    short = gitdiff.diff(repo.git_dir, base, head, max_file_lines=5)
    assert not short.truncated and all(f.truncated and f.shown_lines == 5 for f in short.files)
    assert all(f.additions == 100 for f in short.files)  # counted past the cap


def test_paths_limit_the_diff_and_keep_renames_paired(repo):
    base = repo({"a.txt": b"".join(b"%d\n" % n for n in range(30)), "b.txt": b"b\n"})
    (repo.path / "a.txt").rename(repo.path / "c.txt")
    git(repo.env, "add", "-A", cwd=repo.path)
    head = repo({"b.txt": b"bb\n"})
    (only,) = gitdiff.diff(repo.git_dir, base, head, paths=["a.txt", "c.txt"]).files
    assert (only.status, only.old_path, only.new_path) == ("renamed", "a.txt", "c.txt")
    # Pathspecs are literal: "*" matches no file.
    assert gitdiff.diff(repo.git_dir, base, head, paths=["*"]).files == []
