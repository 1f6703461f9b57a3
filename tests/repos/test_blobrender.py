"""The file view's rows (render.blobrender) through the real page: one row per line, escaped,
exact for odd files (no final newline, CRLF, not UTF-8, empty), cached by blob id, and
highlighted lazily past the page's budget."""

from __future__ import annotations

import html
import re

import pytest
from django.core.cache import cache
from django.test import Client

from render import blobrender
from repos import browse, enqueue, tasks
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

HOSTILE = (
    "<script>alert('x')</script> & \"quoted\"\n"
    'x = "<img src=x onerror=alert(1)>"  # </td></tr><script>\n'
    "\n"
    '<span class="k">fake</span> &amp; &lt;b&gt;\n'
)
ROW = re.compile(
    r'<tr id="L(\d+)"><td class="num"><a href="#L(\d+)">(\d+)</a></td><td class="code">(.*?)</td></tr>'
)
OUR_TAG = re.compile(r'<span class="[a-z0-9]+">|</span>')


def nothing() -> None:
    """A `later` for calls made outside the page, whose task the test runs itself."""


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()  # entries are keyed by blob id: another test's blob would be a hit here


@pytest.fixture
def work(tmp_path, git_home):
    return Work(tmp_path / "work", git_home)


def page(path: str) -> str:
    response = Client().get(f"/olga/proj/blob/main/{path}")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def rows(body: str) -> list[str]:
    """The code cells' HTML, after checking every row's number, anchor and order."""
    table = body.split('<table class="blob-lines"', 1)[1].split("</table>", 1)[0]
    found = ROW.findall(table)
    assert "".join(m.group(0) for m in ROW.finditer(table)) == table.split(">", 1)[1]  # rows only
    for n, (row_id, href, label, _code) in enumerate(found, 1):
        assert row_id == href == label == str(n)
    return [code for *_, code in found]


def shown(code: str) -> str:
    """What a browser shows of a code cell; asserts no markup but ours is in it."""
    rest = OUR_TAG.sub("", code)
    assert "<" not in rest and ">" not in rest and '"' not in rest, code
    return html.unescape(rest)


@pytest.mark.parametrize("name", ["hostile.py", "hostile.html", "hostile.txt", "Makefile"])
def test_hostile_text_is_escaped_and_every_line_kept_exactly(work, name):
    work.commit("hostile", {name: HOSTILE})
    work.publish()
    body = page(name)
    assert "<script>alert" not in body and "<img src=x" not in body
    assert [shown(code) for code in rows(body)] == HOSTILE.splitlines()
    assert "4 lines" in body


def test_no_final_newline_crlf_bom_and_bytes_that_are_not_utf8(work):
    work.commit(
        "odd files",
        {
            "tail.py": "a = 1\nb = 2",
            "dos.c": "int a;\r\n\r\nint b; /* x */\r\n",
            "bom.py": "\ufeffimport os\nos.sep\n",
            "latin1.py": b"name = 'caf\xe9'\n# \xff\xfe\n",
        },
    )
    work.publish()
    tail = rows(page("tail.py"))
    assert [shown(c) for c in tail] == ["a = 1", "b = 2"] and '<span class="mi">2</span>' in tail[1]
    dos = rows(page("dos.c"))
    assert [shown(c) for c in dos] == ["int a;", "", "int b; /* x */"]  # no \r shown, still lexed
    assert '<span class="cm">/* x */</span>' in dos[2]
    assert [shown(c) for c in rows(page("bom.py"))] == ["import os", "os.sep"]
    latin = rows(page("latin1.py"))
    assert [shown(c) for c in latin] == ["name = 'caf\ufffd'", "# \ufffd\ufffd"]


def test_an_empty_file_says_so(work):
    work.commit("empty", {"empty.py": ""})
    work.publish()
    body = page("empty.py")
    assert "This file is empty." in body and "0 lines" in body and "blob-lines" not in body


def test_the_page_links_the_file_at_its_commit_id(work):
    sha = work.commit("one", {"a.py": "x = 1\n"})
    work.publish()
    body = page("a.py")
    assert f'<a href="/olga/proj/blob/{sha}/a.py" id="permalink"' in body
    assert f'data-permalink="/olga/proj/blob/{sha}/a.py"' in body
    assert '<script src="/static/js/blob.js" defer></script>' in body


def test_a_second_view_reads_neither_the_blob_nor_pygments(work, monkeypatch):
    same = "def f():\n    return 1\n"
    work.commit("one", {"src/a.py": same, "src/b.py": same, "notes.txt": same})
    work.publish()
    lexed, read = [], []
    lex, read_blob = blobrender.lex_lines, browse.read_blob
    monkeypatch.setattr(blobrender, "lex_lines", lambda *a, **k: lexed.append(1) or lex(*a, **k))
    monkeypatch.setattr(browse, "read_blob", lambda *a: read.append(a) or read_blob(*a))
    first = rows(page("src/a.py"))
    assert (len(lexed), len(read)) == (1, 1) and '<span class="k">def</span>' in first[0]
    assert rows(page("src/a.py")) == first and (len(lexed), len(read)) == (1, 1)
    # Same content under another name with the same lexer: the same entry.
    assert rows(page("src/b.py")) == first and (len(lexed), len(read)) == (1, 1)
    # Another lexer, another entry; the cache holds the rows, not the page.
    assert rows(page("notes.txt")) == ["def f():", "    return 1"]
    assert len(read) == 2


def test_a_big_file_is_highlighted_within_the_budget_then_wholly_by_the_task(work, monkeypatch):
    text = "".join(f"value_{n} = {n}  # line {n}\n" for n in range(1, 201))
    work.commit("big", {"big.py": text})
    repo = work.publish()
    blob = work.git("rev-parse", "main:big.py")
    enqueued = []
    monkeypatch.setattr(enqueue, "after_commit", lambda name, *args: enqueued.append((name, args)))
    monkeypatch.setattr(blobrender, "PAGE_BUDGET_CHARS", 30 * len("value_1 = 1  # line 1\n"))
    first = rows(page("big.py"))
    assert len(first) == 200 and [shown(c) for c in first] == text.splitlines()
    highlighted = [n for n, code in enumerate(first, 1) if "<span" in code]
    assert highlighted == list(range(1, len(highlighted) + 1)) and 20 < len(highlighted) < 30
    assert enqueued == [("repos.tasks.highlight_blob", (repo.pk, blob, "big.py"))]
    # A second view shows the same rows from the cache without asking again for the task.
    assert rows(page("big.py")) == first and len(enqueued) == 1
    assert tasks.highlight_blob(repo.pk, blob, "big.py") == "done"  # what the page enqueued
    complete = rows(page("big.py"))
    assert all('<span class="c1"># line ' in code for code in complete) and len(enqueued) == 1
    assert [shown(c) for c in complete] == text.splitlines()
    # A page that missed the cache before the task stored its rows does not replace them.
    assert not blobrender.file_rows(blob, "big.py", text, later=nothing).complete
    assert blobrender.cached_rows(blob, "big.py", later=nothing).complete


def test_a_lexer_past_its_cpu_limit_leaves_the_lines_plain(work, monkeypatch):
    work.commit("one", {"a.py": "x = 1\n" * 2000})
    repo = work.publish()
    blob = work.git("rev-parse", "main:a.py")
    monkeypatch.setattr(enqueue, "after_commit", lambda name, *args: None)
    monkeypatch.setattr(blobrender, "PAGE_CPU_LIMIT_S", -1.0)
    monkeypatch.setattr(blobrender, "TASK_CPU_LIMIT_S", -1.0)
    assert all("<span" not in code for code in rows(page("a.py")))
    assert not blobrender.cached_rows(blob, "a.py", later=nothing).complete  # the task may do better
    tasks.highlight_blob(repo.pk, blob, "a.py")
    final = blobrender.cached_rows(blob, "a.py", later=nothing)
    assert final.complete and final.lines == 2000 and "<span" not in final.html


def test_a_task_for_a_repository_gone_or_a_blob_missing_does_nothing(work):
    work.commit("one", {"a.py": "x = 1\n"})
    repo = work.publish()
    assert tasks.highlight_blob(repo.pk + 1000, "0" * 40, "a.py") == "gone"
    assert tasks.highlight_blob(repo.pk, "0" * 40, "a.py") == "failed"


def test_split_lines_counts_as_git_does():
    assert blobrender.split_lines("") == []
    assert blobrender.split_lines("\n") == [""]
    assert blobrender.split_lines("a\n\nb") == ["a", "", "b"]
    assert blobrender.split_lines("a\r\nb\r\n") == ["a", "b"]
    assert blobrender.split_lines("a\rb\n") == ["a\rb"]  # a lone CR is text, not a line end
