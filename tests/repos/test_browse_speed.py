"""What makes the browse pages fast, kept honest: git processes per warm page (none for a tree,
however many entries), cached fragments that follow a branch when it moves (a commit made with
the web editor), and a long compare that lists the newest commits with the total and a cut diff."""

from __future__ import annotations

import subprocess

import pytest
from django.test import Client

from gitcore import catfile
from gitcore.git import run_git
from repos import compare
from tests.repos.histories import Work
from tests.workspaces.webedit_pages_support import Scene, build_history, page, signed_in, submit

pytestmark = pytest.mark.django_db


class _Counting:
    """Counts the git processes started while it is active (every run_git and popen_git)."""

    def __init__(self, monkeypatch):
        self.argvs: list[list[str]] = []
        real = subprocess.Popen
        argvs = self.argvs

        class Popen(real):  # type: ignore[misc, valid-type]
            def __init__(self, args, *a, **kw):
                if "git" in str(args[0]):
                    argvs.append([str(x) for x in args])
                super().__init__(args, *a, **kw)

        monkeypatch.setattr(subprocess, "Popen", Popen)


def _get(url: str) -> str:
    response = Client().get(url)
    assert response.status_code == 200, (url, response.status_code)
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.fixture
def wide(tmp_path, git_home):
    work = Work(tmp_path / "work", git_home)
    files: dict[str, bytes | str | None] = {"README.md": "# Wide\n"}
    files |= {f"few/f{i}.txt": f"{i}\n" for i in range(3)}
    files |= {f"many/sub{i % 7}/x.txt": "x\n" for i in range(7)}
    files |= {f"many/f{i:03d}.txt": f"{i}\n" for i in range(300)}
    work.commit("wide", files)
    return work.publish()


def test_a_warm_tree_page_starts_no_git_process_however_many_entries(wide, monkeypatch):
    few, many = "/olga/proj/tree/main/few", "/olga/proj/tree/main/many"
    assert "f2.txt" in _get(few) and "f299.txt" in _get(many)  # warm: cat-file started, cached
    counting = _Counting(monkeypatch)
    for url in (few, many, "/olga/proj/tree/main", "/olga/proj/raw/main/few/f1.txt"):
        _get(url)
    assert counting.argvs == []
    # Cold, with a process per repository already running, a listing still starts none.
    catfile.close_all()
    _get("/olga/proj/tree/main/many/sub3")
    assert [a for a in counting.argvs if "cat-file" not in a] == []


def test_the_pages_follow_a_branch_moved_by_the_web_editor(tmp_path_factory):
    scene = Scene(build_history(tmp_path_factory))
    before = {
        url: page(Client(), url) for url in ("/olga/proj", "/olga/proj/tree/main", "/olga/proj/commits/main")
    }
    assert "Hello." in before["/olga/proj"] and "Hello." in before["/olga/proj/tree/main"]
    response = submit(
        signed_in(scene.maud),
        "/olga/proj/edit/main/README.md",
        content="# Project\n\nMoved on.\n",
        message="Say something new",
        target="branch",
    )
    assert response.status_code == 302
    for url in before:
        html = page(Client(), url)
        assert "Say something new" in html or "Moved on." in html, url
    assert "Moved on." in page(Client(), "/olga/proj") and "Hello." not in page(
        Client(), "/olga/proj/tree/main"
    )
    assert "Say something new" in page(Client(), "/olga/proj/commits/main")


@pytest.fixture
def long_range(tmp_path, git_home):
    """main: a base commit tagged `base`, then 300 commits written with fast-import."""
    work = Work(tmp_path / "work", git_home)
    work.commit("base", {"a.txt": "0\n"})
    work.git("tag", "base")
    parent = work.git("rev-parse", "HEAD")
    stream = []
    for i in range(300):
        data = f"{i}\n"
        message = f"step {i}\n"
        stream.append(
            f"commit refs/heads/main\nmark :{i + 1}\n"
            f"committer T <t@example.invalid> {1_700_000_000 + i} +0000\n"
            f"data {len(message)}\n{message}" + (f"from {parent}\n" if i == 0 else "")
            + f"M 100644 inline f{i % 60}.txt\ndata {len(data)}\n{data}\n"
        )  # fmt: skip
    subprocess.run(
        ["git", "-C", str(work.path), "fast-import", "--quiet", "--force"],
        input="".join(stream).encode(),
        env=work.env,
        check=True,
        capture_output=True,
    )
    work.git("reset", "--quiet", "--hard", "main")
    return work.publish()


def test_a_long_compare_lists_the_newest_commits_with_the_total_and_cuts_the_diff(long_range, monkeypatch):
    html = _get("/olga/proj/compare/base...main")
    assert "300 commits; only the newest 250 are listed." in html
    assert html.count('<li><a class="sha"') == 250
    assert "step 299" in html and "step 49\n" not in html and ">step 10<" not in html
    # 60 files changed: the long-range diff shows the first 50 and offers the whole diff.
    assert "More than 50 files changed" in html and "?all=1" in html
    assert _get("/olga/proj/compare/base...main") == html  # warm: the same page


def test_a_count_that_takes_too_long_says_more_than(long_range, monkeypatch):
    monkeypatch.setattr(compare, "COUNT_SECONDS", 0.000001)
    older = run_git(["rev-parse", "main~1"], repo=long_range.disk_path).text.strip()  # a range never counted
    html = _get(f"/olga/proj/compare/base...{older}")
    assert "More than 250 commits; only the newest 250 are listed." in html


def test_a_short_compare_lists_everything_with_no_cap(long_range):
    older = run_git(["rev-parse", "main~3"], repo=long_range.disk_path).text.strip()
    html = _get(f"/olga/proj/compare/{older}...main")
    assert "only the newest" not in html and html.count('<li><a class="sha"') == 3


def test_the_repository_page_lists_branches_and_tags_as_they_change(wide, monkeypatch):
    path = wide.disk_path
    assert "v9" not in _get("/olga/proj")
    counting = _Counting(monkeypatch)
    _get("/olga/proj")
    assert counting.argvs == []  # warm: the ref list is cached while no ref moves
    tip = run_git(["rev-parse", "refs/heads/main"], repo=path).text.strip()
    run_git(["update-ref", "refs/tags/v9", tip], repo=path)
    run_git(["update-ref", "refs/heads/topic", tip], repo=path)
    html = _get("/olga/proj")
    assert "v9" in html and "topic" in html
    run_git(["pack-refs", "--all"], repo=path)
    run_git(["update-ref", "-d", "refs/heads/topic"], repo=path)
    html = _get("/olga/proj")
    assert "v9" in html and "topic" not in html
