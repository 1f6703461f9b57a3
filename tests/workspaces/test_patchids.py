"""workspaces.patchids against real repositories: a change keeps its patch-id whatever commit
carries it (cherry-pick, rebase, squash), and different changes differ."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitcore.gitdiff import empty_tree
from gitcore.gittools import rev_parse
from tests.gitutil import git
from workspaces import patchids


class Work:
    """A working repository with helpers that commit and answer commit ids."""

    def __init__(self, path: Path, env: dict[str, str]):
        self.path, self.env = path, env
        git(env, "init", "--quiet", "--initial-branch=main", str(path))

    @property
    def git_dir(self) -> Path:
        return self.path / ".git"

    def run(self, *args: str) -> str:
        return git(self.env, *args, cwd=self.path).stdout

    def commit(self, message: str, **files: str) -> str:
        for name, text in files.items():
            (self.path / name).write_text(text)
            self.run("add", name)
        self.run("commit", "--quiet", "--allow-empty", "-m", message)
        return rev_parse(self.git_dir, "HEAD")


@pytest.fixture
def work(tmp_path, git_home) -> Work:
    work = Work(tmp_path / "work", git_home)
    work.commit("root", a="one\ntwo\nthree\n", b="bee\n")
    return work


def test_same_patch_on_two_branches_same_id(work):
    base = rev_parse(work.git_dir, "main")
    work.commit("unrelated on main", c="sea\n")
    work.run("checkout", "--quiet", "-b", "topic", base)
    change = work.commit("change a", a="one\nTWO\nthree\n")
    work.run("checkout", "--quiet", "main")
    work.run("cherry-pick", change)
    picked = rev_parse(work.git_dir, "HEAD")
    assert picked != change
    ids = patchids.of_commits(work.git_dir, [change, picked])
    assert ids[change] == ids[picked]


def test_different_patches_differ(work):
    first = work.commit("first", a="one\n2\nthree\n")
    second = work.commit("second", a="one\n2\n3\n")
    third = work.commit("third", b="bee?\n")
    ids = patchids.of_commits(work.git_dir, [first, second, third, first])  # duplicates once
    assert set(ids) == {first, second, third}
    assert len(set(ids.values())) == 3


def test_root_commit_has_the_id_of_its_whole_tree(work):
    root = rev_parse(work.git_dir, "main")
    ids = patchids.of_commits(work.git_dir, [root])
    assert ids[root] == patchids.of_range(work.git_dir, empty_tree(work.git_dir), root)


def test_merges_and_empty_commits_have_none(work):
    base = rev_parse(work.git_dir, "main")
    empty = work.commit("nothing")
    work.run("checkout", "--quiet", "-b", "side", base)
    side = work.commit("side", c="side\n")
    work.run("checkout", "--quiet", "main")
    work.run("merge", "--quiet", "--no-ff", "-m", "merge side", "side")
    merge = rev_parse(work.git_dir, "HEAD")
    ids = patchids.of_commits(work.git_dir, [empty, side, merge])
    assert set(ids) == {side}
    assert patchids.of_commits(work.git_dir, []) == {}
    assert patchids.of_range(work.git_dir, empty, empty) is None


def test_squash_has_the_combined_id(work):
    base = rev_parse(work.git_dir, "main")
    work.commit("step 1", a="one\nTWO\nthree\n")
    work.commit("step 2", c="new file\n")
    tip = work.commit("step 3", b="BEE\n")
    combined = patchids.of_range(work.git_dir, base, tip)
    work.run("checkout", "--quiet", "-b", "squashed", base)
    work.run("merge", "--quiet", "--squash", tip)
    work.run("commit", "--quiet", "-m", "squashed")
    squash = rev_parse(work.git_dir, "HEAD")
    assert patchids.of_commits(work.git_dir, [squash])[squash] == combined
    assert patchids.of_commits(work.git_dir, [tip])[tip] != combined  # one step is not the whole


def test_ranges_in_one_pipeline_match_one_by_one(work):
    base = rev_parse(work.git_dir, "main")
    one = work.commit("one", a="1\n")
    two = work.commit("two", b="2\n")
    work.run("checkout", "--quiet", "-b", "other", base)
    other = work.commit("other", c="3\n")
    pairs = [(two, base), (one, base), (other, base)]
    batch = patchids.of_ranges(work.git_dir, pairs)
    assert batch == {tip: patchids.of_range(work.git_dir, b, tip) for tip, b in pairs}
    assert len(set(batch.values())) == 3
    assert patchids.of_ranges(work.git_dir, []) == {}
