"""The blame page against real histories: grouping, "blame prior to this change" across a
rename, age shades, escaping, odd names, the time limit and the refusals."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import subprocess

import pytest
from django.test import Client

from render.gitquote import unquote_path
from repos.blame import Attribution
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

GROUP = re.compile(r'<tbody class="blame-group ([^"]*)">(.*?)</tbody>', re.S)


def dated(work: Work, year: int) -> None:
    stamp = f"{year}-06-01T12:00:00+0000"
    work.env = {**work.env, "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}


def body(path: str) -> str:
    response = Client().get(path)
    assert response.status_code == 200, (response.status_code, path)
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def groups(page: str) -> list[tuple[str, str, list[int]]]:
    """(css classes, the group's commit id or "", its line numbers) in page order."""
    found = []
    for css, html in GROUP.findall(page):
        sha = re.search(r'class="blame-sha" href="/olga/proj/commit/([0-9a-f]+)"', html)
        numbers = [int(n) for n in re.findall(r'<a id="L(\d+)"', html)]
        rowspan = re.search(r'rowspan="(\d+)"', html)
        assert rowspan and int(rowspan[1]) == len(numbers)
        found.append((css, sha[1] if sha else "", numbers))
    return found


@pytest.fixture
def history(tmp_path, git_home):
    """old.txt written in 2001, line 2 changed in 2011 while renamed to new.txt, two lines
    appended in 2021."""
    work = Work(tmp_path / "w", git_home)
    dated(work, 2001)
    first = work.commit("first", {"old.txt": "one\ntwo\nthree\nfour\n"})
    dated(work, 2011)
    work.git("mv", "old.txt", "new.txt")
    second = work.commit("second", {"new.txt": "one\nTWO\nthree\nfour\n"})
    dated(work, 2021)
    third = work.commit("third", {"new.txt": "one\nTWO\nthree\nfour\nfive\nsix\n"})
    repo = work.publish()
    return repo, first, second, third


def test_lines_are_grouped_by_commit_in_file_order(history):
    _repo, first, second, third = history
    page = body("/olga/proj/blame/main/new.txt")
    assert [(sha, lines) for _css, sha, lines in groups(page)] == [
        (first, [1]),
        (second, [2]),
        (first, [3, 4]),
        (third, [5, 6]),
    ]
    assert 'href="/olga/proj/blob/main/new.txt#L5"' in page
    assert '<td class="blame-code">three</td>' in page
    assert "blame-cut" not in page


def test_age_shades_run_from_the_first_commit_to_the_blamed_one(history):
    page = body("/olga/proj/blame/main/new.txt")
    shades = [css.split()[-1] for css, _sha, _lines in groups(page)]
    assert shades == ["age-9", "age-5", "age-9", "age-0"]


def test_prior_link_goes_to_the_parent_across_the_rename(history):
    _repo, first, second, _third = history
    page = body("/olga/proj/blame/main/new.txt")
    rows = GROUP.findall(page)
    # The 2011 change points before itself: the parent, where the file was still old.txt.
    assert f'class="blame-prior" href="/olga/proj/blame/{first}/old.txt"' in rows[1][1]
    assert f'href="/olga/proj/blame/{second}/new.txt"' in rows[3][1]  # the 2021 lines
    assert "blame-prior" not in rows[0][1]  # the root commit has nothing before it
    prior = body(f"/olga/proj/blame/{first}/old.txt")
    assert [(sha, lines) for _css, sha, lines in groups(prior)] == [(first, [1, 2, 3, 4])]
    assert '<td class="blame-code">two</td>' in prior


def test_hostile_names_messages_and_lines_are_escaped(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    # git drops < and > from names; quotes and ampersands stay.
    work.env = {**work.env, "GIT_AUTHOR_NAME": 'Eve " onmouseover="alert(1) & co'}
    work.commit('<script>alert("subject")</script>', {"x.html": "<img src=x onerror=alert(1)>\n"})
    work.publish()
    page = body("/olga/proj/blame/main/x.html")
    assert "<script>alert" not in page and "<img src=x" not in page and '" onmouseover' not in page
    assert "&lt;script&gt;alert(&quot;subject&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "Eve &quot; onmouseover=&quot;alert(1) &amp; co" in page


def test_a_name_that_is_not_utf8(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    name = os.fsdecode(b'caf\xe9 "q".txt')
    work.commit("first", {name: "a\nb\n"})
    work.commit("second", {name: "a\nB\n"})
    work.publish()
    page = body("/olga/proj/blame/main/caf%E9%20%22q%22.txt")
    assert [lines for _css, _sha, lines in groups(page)] == [[1], [2]]
    # git prints the earlier name C-quoted; the link carries the original bytes.
    assert re.search(r'class="blame-prior" href="/olga/proj/blame/[0-9a-f]{40}/caf%E9%20%22q%22.txt"', page)
    assert "caf\ufffd" in page


def test_binary_large_empty_and_directories(tmp_path, git_home, settings):
    work = Work(tmp_path / "w", git_home)
    work.commit("first", {"data.bin": b"\0\1\2", "big.txt": "x\n" * 100, "empty.txt": "", "d/f.txt": "f\n"})
    work.publish()
    assert (
        "Binary file: there are no lines to blame"
        in Client().get("/olga/proj/blame/main/data.bin").content.decode()
    )
    assert "This file is empty" in Client().get("/olga/proj/blame/main/empty.txt").content.decode()
    settings.BLOB_MAX_DISPLAY_BYTES = 100
    assert "too large to blame" in Client().get("/olga/proj/blame/main/big.txt").content.decode()
    assert Client().get("/olga/proj/blame/main/d").status_code == 302
    for bad in (
        "/olga/proj/blame/main/nope.txt",
        "/olga/proj/blame/nope/d/f.txt",
        "/olga/proj/blame/main/../x",
    ):
        assert Client().get(bad).status_code == 404, bad


def long_history(path, env, commits: int, lines: int) -> None:
    """`commits` commits, each rewriting one line of a `lines`-line file, by fast-import."""
    out = []
    content = [f"line {i}\n" for i in range(lines)]
    for n in range(commits):
        content[(n * 7) % lines] = f"line {(n * 7) % lines} changed in {n}\n"
        data = "".join(content).encode()
        message = f"change {n}".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"committer C <c@example.invalid> {1_000_000_000 + n * 60} +0000\n".encode())
        out.append(b"data %d\n%s\n" % (len(message), message))
        out.append(b"M 100644 inline big.txt\ndata %d\n%s\n" % (len(data), data))
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], env=env, check=True)
    subprocess.run(
        ["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(out), env=env, check=True
    )


def test_a_blame_that_runs_out_of_time_says_so_and_shows_what_it_has(tmp_path, git_home, settings):
    from sources import importing
    from tests.factories import UserFactory

    long_history(tmp_path / "src", git_home, commits=1500, lines=3000)
    importing.import_now(owner=UserFactory(username="olga"), name="proj", source=str(tmp_path / "src"))
    settings.BLAME_TIMEOUT = 0.05
    page = body("/olga/proj/blame/main/big.txt")
    assert "Blame took too long (over 0.05 s) and was stopped" in page
    assert "blame-unknown" in page  # lines git had not reached are listed, not attributed
    assert len(re.findall(r'<a id="L\d+"', page)) == 3000
    assert page.rstrip().endswith("</html>")


def git_children() -> dict[int, bytes]:
    """This process's git children, running or not yet reaped, but for the long-lived
    `cat-file` readers the pages keep per repository (gitcore.catfile): pid -> command line."""
    found = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        with contextlib.suppress(OSError), open(stat) as fh:
            text = fh.read()
            name, fields = text.split(" ", 2)[1], text.rsplit(")", 1)[1].split()
            if int(fields[1]) != os.getpid() or name != "(git)":
                continue
            with contextlib.suppress(OSError), open(stat.replace("/stat", "/cmdline"), "rb") as cmd:
                line = cmd.read()
                if b"\0cat-file\0" not in line:
                    found[int(text.split(" ", 1)[0])] = line.replace(b"\0", b" ")
    return found


def test_the_page_head_goes_out_before_git_finishes(history):
    # Counted against what runs already: other modules in this worker process may leave a git
    # of their own running or unreaped (a stopped blame is reaped a moment after its page).
    before = set(git_children())
    response = Client().get("/olga/proj/blame/main/new.txt")
    chunks = iter(response.streaming_content)
    head = next(chunks).decode()
    assert head.endswith('<table class="blame">') and "blame-group" not in head
    started = {pid: line for pid, line in git_children().items() if pid not in before}
    assert len(started) == 1, started  # git blame, started before the head went out
    response.close()  # the client goes away: git is killed and reaped
    assert not set(started) & set(git_children())


def test_workspace_refs_are_blamed_by_full_name_and_other_namespaces_not(history):
    repo, first, _second, _third = history
    for ref in ("refs/users/x/w", "refs/archive/x/w"):
        subprocess.run(["git", "--git-dir", str(repo.disk_path), "update-ref", ref, first], check=True)
    page = body("/olga/proj/blame/refs/users/x/w/old.txt")
    assert first[:10] in page
    assert Client().get("/olga/proj/blame/refs/archive/x/w/old.txt").status_code == 404


def test_attribution_holds_a_run_until_it_ends():
    def entry(sha: str, start: int, count: int) -> list[bytes]:
        return [f"{sha} {start} {start} {count}\n".encode(), b"author A\n", b"filename f\n"]

    attribution = Attribution(5)
    feed = attribution.feed(iter(entry("b" * 40, 4, 2) + entry("a" * 40, 1, 2) + entry("a" * 40, 3, 1)))
    assert next(feed) == []  # lines 4-5 are known, but 1-3 are not yet
    assert next(feed) == []  # 1-2 by a: the run may go on
    done = next(feed)  # 3 by a as well: a's run ends where b's starts
    assert [(g.commit.sha[0] if g.commit else None, g.start, g.end) for g in done] == [("a", 1, 3)]
    assert [(g.start, g.end) for g in attribution.finish()] == [(4, 5)]
    assert unquote_path(b'"caf\\351 \\"q\\".txt"') == b'caf\xe9 "q".txt'
