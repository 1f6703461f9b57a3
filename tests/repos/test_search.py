"""In-repository search (git grep) against real repositories: literal and regex, case, path
filters, stable pages, odd names, binary files, the time limit, refs and bad input."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from django.test import Client

from repos import grep
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

HIT = re.compile(r'<td class="num"><a href="([^"]+)">(\d+)</a></td><td class="code">(.*?)</td>')


@pytest.fixture
def repo(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    work.commit(
        "first",
        {
            "src/app.py": "x = 'a.b'\ny = 'axb'\nHello = 1\n",
            "src/util.c": "int hello;\n",
            "docs/guide.md": "hello from the guide\n<script>needle</script>\n",
            "data.bin": b"hello\0needle\0",
            os.fsdecode(b"caf\xe9.txt"): "needle in latin-1 name\n",
            "odd\nname.txt": "needle after a newline in the name\n",
        },
    )
    work.git("checkout", "-q", "-b", "other")
    work.commit("other only", {"other.txt": "needle on another branch\n"})
    work.git("checkout", "-q", "main")
    return work.publish()


def search(query: str, status: int = 200) -> str:
    response = Client().get(f"/olga/proj/search?{query}")
    assert response.status_code == status, (response.status_code, response.content[:300])
    return response.content.decode()


def hits(page: str) -> list[tuple[str, int, str]]:
    return [(url, int(n), code) for url, n, code in HIT.findall(page)]


def paths(page: str) -> list[str]:
    return [url.split("/blob/", 1)[1].split("/", 1)[1].split("#")[0] for url, _n, _c in hits(page)]


def test_literal_by_default_regex_when_asked(repo):
    assert paths(search("q=a.b")) == ["src/app.py"]
    assert [n for _u, n, _c in hits(search("q=a.b"))] == [1]
    assert [n for _u, n, _c in hits(search("q=a.b&regex=1"))] == [1, 2]


def test_case_insensitive_unless_asked(repo):
    assert paths(search("q=hello")) == ["docs/guide.md", "src/app.py", "src/util.c"]
    assert paths(search("q=Hello&case=1")) == ["src/app.py"]


def test_matches_are_highlighted_escaped_and_link_to_the_line(repo):
    page = search("q=needle&path=docs")
    [(url, number, code)] = hits(page)
    sha = subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "rev-parse", "main"], capture_output=True, text=True
    ).stdout.strip()
    assert url == f"/olga/proj/blob/{sha}/docs/guide.md#L2" and number == 2
    assert code == "&lt;script&gt;<mark>needle</mark>&lt;/script&gt;"
    assert "<script>needle" not in page


def test_path_filters_are_globs_and_magic_is_refused(repo):
    assert paths(search("q=hello&path=*.c")) == ["src/util.c"]
    assert paths(search("q=hello&path=src/")) == ["src/app.py", "src/util.c"]
    for bad in (":(exclude)src", ":!src", "../x", "/etc", "src/../docs"):
        page = search(f"q=hello&path={bad}", status=400)
        assert "path filter" in page


def test_binary_files_are_skipped_and_odd_names_found(repo):
    page = search("q=needle")
    found = paths(page)
    assert "data.bin" not in found
    assert "caf%E9.txt" in found and "caf\ufffd.txt" in page  # the link keeps the bytes
    assert "odd%0Aname.txt" in found  # a newline in a name does not split the record
    assert Client().get(f"/olga/proj/blob/main/{found[0]}").status_code == 200


def test_other_refs_and_hidden_ones(repo):
    assert "other.txt" in paths(search("q=needle&ref=other"))
    assert "other.txt" not in paths(search("q=needle"))
    subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "update-ref", "refs/users/eve/w", "refs/heads/other"],
        check=True,
    )
    for ref in ("refs/users/eve/w", "nope", "main~1", "-v", "x" * 2000):
        search(f"q=needle&ref={ref}", status=404)


def test_pages_are_stable_and_cover_every_match(tmp_path, git_home, monkeypatch):
    work = Work(tmp_path / "w", git_home)
    work.commit("many", {f"f{i:03}.txt": "needle\n" * 12 for i in range(30)})
    work.publish()
    monkeypatch.setattr(grep, "PER_PAGE", 25)
    seen, page = [], 1
    while True:
        text = search(f"q=needle&page={page}")
        assert search(f"q=needle&page={page}") == text  # the same page twice
        seen += [(p, n) for p, (_u, n, _c) in zip(paths(text), hits(text), strict=True)]
        if 'id="search-next"' not in text:
            break
        page += 1
    # At most MAX_PER_FILE lines per file, every one once, in path order.
    expected = [(f"f{i:03}.txt", n) for i in range(30) for n in range(1, grep.MAX_PER_FILE + 1)]
    assert seen == expected and page == 12
    search(f"q=needle&page={page + 1}", status=404)


def test_a_catastrophic_regex_hits_the_time_limit(tmp_path, git_home, settings):
    work = Work(tmp_path / "w", git_home)
    work.commit("long lines", {"a.txt": "needle\n", "long.txt": ("a" * 30000 + "b\n") * 3})
    work.publish()
    settings.SEARCH_TIMEOUT = 1
    page = search("q=(a%2B)%2B$&regex=1")
    assert "The search took too long (over 1 s) and was stopped" in page
    assert "search-none" not in page
    # Backreferences are refused outright: their cost is memory as well as time.
    assert "Backreferences" in search("q=(a*)*b\\1&regex=1", status=400)


def test_bad_input_is_refused_with_a_message(repo):
    assert "control characters" in search("q=a%00b", status=400)
    assert "control characters" in search("q=a%0Ab", status=400)
    assert "longer than 1,000" in search("q=" + "x" * 1001, status=400)
    assert "git could not use this search" in search("q=(&regex=1", status=400)
    for page in ("0", "abc", "-1", "101", "99999999999999999999"):
        search(f"q=hello&page={page}", status=404)
    search("q=nothing-matches-this&page=2", status=404)
    assert 'id="search-none"' in search("q=nothing-matches-this")


def test_an_empty_query_shows_the_form_only(repo):
    page = search("")
    assert 'id="search-form"' in page and "search-summary" not in page and "search-none" not in page
    assert 'class="repo-search-box"' in Client().get("/olga/proj").content.decode()


def test_an_empty_repository(tmp_path, git_home):
    from repos import services
    from tests.factories import UserFactory

    services.repository_create(owner=UserFactory(username="olga"), name="proj")
    assert "no commits to search yet" in search("q=x")


def test_long_lines_are_cut_and_say_so(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    work.commit(
        "long", {"a.txt": "needle " + "x" * 1500 + "\n", "b.txt": "needle " + "y" * 5000 + " needle\n"}
    )
    work.publish()
    [(_u, _n, short), (_u2, _n2, long)] = hits(search("q=needle"))
    assert short.endswith("x" * 1500) and "&hellip;" not in short
    assert long.endswith("y &hellip;") and long.count("<mark>") == 1
    assert len(long) < grep.MAX_LINE + 100
