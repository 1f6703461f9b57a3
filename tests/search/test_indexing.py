"""Keeping the index: changed files only, deleted ones dropped, repeated runs change nothing,
a new default branch or a lost indexed commit reads the whole tree, and the command."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from repos import services
from search.models import CodeFile, CommitEntry, IndexState

pytestmark = pytest.mark.django_db


def paths(repo) -> dict[str, str]:
    return dict(CodeFile.objects.filter(repository=repo).values_list("path", "blob"))


def test_changes_deletions_and_repeats(make_work):
    work = make_work()
    work.write({"a.txt": "one\n", "b.txt": "two\n", "dir/c.txt": "three\n", "link": "x"})
    first = work.index()
    assert (first.files_written, first.files_deleted) == (4, 0)
    before = paths(work.repo)
    work.write({"a.txt": "ONE\n", "dir/c.txt": None, "d.txt": "four\n"})
    second = work.index()
    # Only what changed is read and written.
    assert (second.files_written, second.files_deleted) == (2, 1)
    after = paths(work.repo)
    assert set(after) == {"a.txt", "b.txt", "d.txt", "link"}
    assert after["b.txt"] == before["b.txt"] and after["a.txt"] != before["a.txt"]
    # A redelivered task finds nothing to do.
    again = work.index()
    assert (again.files_written, again.files_deleted, again.commits) == (0, 0, 0)


def test_a_file_that_becomes_binary_or_a_symlink_leaves(make_work, git_home):
    work = make_work()
    work.write({"a.txt": "text\n", "b.txt": "text\n"})
    work.index()
    work.write({"a.txt": b"now \x00 binary"})
    from tests.gitutil import git

    (work.path / "b.txt").unlink()
    (work.path / "b.txt").symlink_to("a.txt")
    git(git_home, "add", "b.txt", cwd=work.path)
    git(git_home, "commit", "--quiet", "-m", "link", cwd=work.path)
    work.publish("refs/heads/main")
    work.index()
    assert paths(work.repo) == {}


def test_new_default_branch_reads_its_tree(make_work):
    work = make_work()
    work.write({"main.txt": "main\n"})
    work.write({"other.txt": "other\n"}, branch="other")
    work.index()
    assert set(paths(work.repo)) == {"main.txt"}
    services.repository_update(repo=work.repo, default_branch="other")
    work.index()
    assert set(paths(work.repo)) == {"main.txt", "other.txt"}
    state = IndexState.objects.get(repository=work.repo)
    assert state.code_branch == "other"


def test_a_lost_indexed_commit_reads_the_whole_tree(make_work):
    work = make_work()
    work.write({"a.txt": "a\n", "b.txt": "b\n"})
    work.index()
    IndexState.objects.filter(repository=work.repo).update(code_commit="0123456789" * 4)
    CodeFile.objects.filter(repository=work.repo, path="b.txt").delete()
    CodeFile.objects.create(
        repository=work.repo,
        path_hash="f" * 40,
        path="gone.txt",
        path_url="gone.txt",
        blob="0" * 40,
        size=1,
        content="x",
    )
    work.index()
    assert set(paths(work.repo)) == {"a.txt", "b.txt"}


def test_an_emptied_default_branch_empties_the_index(make_work):
    work = make_work()
    work.write({"a.txt": "a\n"})
    work.index()
    from gitcore.git import run_git

    run_git(["update-ref", "-d", "refs/heads/main"], repo=work.repo.disk_path)
    work.index()
    assert paths(work.repo) == {}


def test_reindex_command(make_work, capsys):
    work = make_work()
    work.write({"a.txt": "a\n"}, message="first")
    work.write({"b.txt": "b\n"}, message="second")
    call_command("search", "reindex", "owner/project")
    assert "owner/project: 2 files written, 0 removed, 2 commits" in capsys.readouterr().out
    call_command("search", "reindex", "--fresh")
    assert CommitEntry.objects.filter(repository=work.repo).count() == 2
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("search", "reindex", "owner/nope")


def test_commits_taken_off_the_branches_leave(make_work):
    from gitcore.git import run_git

    work = make_work()
    base = work.write({"a.txt": "a\n"}, message="kept base")
    work.write({"b.txt": "b\n"}, message="rewritten away")
    work.write({"c.txt": "c\n"}, message="on a branch that goes", branch="doomed")
    work.index()
    assert CommitEntry.objects.filter(repository=work.repo).count() == 3
    run_git(["update-ref", "refs/heads/main", base], repo=work.repo.disk_path)  # a force-push
    run_git(["update-ref", "-d", "refs/heads/doomed"], repo=work.repo.disk_path)
    work.index()
    messages = set(CommitEntry.objects.filter(repository=work.repo).values_list("message", flat=True))
    assert messages == {"kept base"}
    assert IndexState.objects.get(repository=work.repo).commit_tips == [base]
