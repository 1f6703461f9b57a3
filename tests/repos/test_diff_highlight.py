"""Highlighted diffs (render.diffhighlight, repos.diffcache): escaping, text kept exactly, word
changes, the size cap, and the cache, on diffs read from real repositories."""

from __future__ import annotations

import html
import re
import shutil

import pytest
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitcore import gitdiff
from gitcore.git import GitError
from render import diffhighlight, diffrender, diffs
from render.diffs import FileDiff, Hunk, Line
from repos import diffcache, tasks
from tests.gitutil import git

HOSTILE = [
    "<script>alert('x')</script> & \"quoted\" 'single'",
    '<span class="k">fake</span> &amp; &lt;b&gt; <!-- c --> ]]> </del><ins>',
    'x = "<img src=x onerror=alert(1)>"  # </td></tr><script>',
]
TAG = re.compile(r"</?(?:span|ins|del)\b[^>]*>")
ALLOWED_TAG = re.compile(r'<span class="[a-z0-9]+">|</span>|<ins>|</ins>|<del>|</del>')


def plain(fragment: str) -> str:
    """What a browser shows of a line's HTML: the tags gone, the entities decoded."""
    return html.unescape(TAG.sub("", fragment))


def only_our_markup(fragment: str) -> bool:
    """Every tag is one we emit, and no raw < or > is left over from the text."""
    rest = ALLOWED_TAG.sub("", fragment)
    return "<" not in rest and ">" not in rest and '"' not in rest


@pytest.fixture
def repo(tmp_path, git_home):
    path = tmp_path / "work"
    git(git_home, "init", "--quiet", "-b", "main", str(path))

    def commit(files: dict[str, str]) -> str:
        for name, content in files.items():
            (path / name).write_text(content)
            git(git_home, "add", "--", name, cwd=path)
        git(git_home, "commit", "--quiet", "-m", "change", cwd=path)
        return git(git_home, "rev-parse", "HEAD", cwd=path).stdout.strip()

    commit.git_dir = path / ".git"
    return commit


def test_hostile_lines_render_inert_and_keep_their_text(repo):
    names = ["a.py", "b.html", "c.txt", "d.js", "Makefile"]
    base = repo({n: "\n".join(HOSTILE) + "\n" for n in names})
    head = repo({n: "\n".join(h.replace("x", "y") for h in HOSTILE) + "\nadded <b>\n" for n in names})
    result = gitdiff.diff(repo.git_dir, base, head)
    assert diffhighlight.highlight_diff(result)  # all of it
    assert {f.path for f in result.files} == set(names)
    for f in result.files:
        lines = [line for h in f.hunks for line in h.lines]
        assert lines and all(line.html for line in lines if line.kind != "note")
        for line in lines:
            assert plain(line.html) == line.text, (f.path, line.text, line.html)
            assert only_our_markup(line.html), (f.path, line.html)
            assert "<script" not in line.html and "<img" not in line.html
    python = next(f for f in result.files if f.path == "a.py")
    assert any('<span class="s2">' in line.html for h in python.hunks for line in h.lines)  # a string


def test_page_markup_escapes_file_names_and_lines(repo):
    evil = "<img src=x onerror=alert(1)>.py"
    base = repo({evil: "x = '<script>'\n"})
    head = repo({evil: "x = '<script>' & 1\n"})
    diff = diffcache.highlighted_diff(repo.git_dir, base, head)
    page = render_to_string("repos/_diff.html", {"diff": diff, "diff_url": "/d", "diff_mode": ""})
    assert "<img" not in page and "<script" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.py" in page
    assert "&#x27;&lt;script&gt;&#x27;" in page and "<ins>" in page


def test_word_level_changes_pair_deleted_and_added_lines():
    hunk = Hunk(1, 3, 1, 3, "", [
        Line("del", "total = price * count", 1, None),
        Line("del", "print(total)", 2, None),
        Line("add", "total = price * amount", None, 1),
        Line("add", "print(total, file=out)", None, 2),
        Line("add", "completely different line here", None, 3),
    ])  # fmt: skip
    diffhighlight.highlight_file(FileDiff("f.txt", "f.txt", hunks=[hunk]))
    first_del, second_del, first_add, second_add, extra = hunk.lines
    assert first_del.html == "total = price * <del>count</del>"
    assert first_add.html == "total = price * <ins>amount</ins>"
    assert second_add.html == "print(total<ins>, file=out</ins>)"
    assert second_del.html == "print(total)"
    assert extra.html == "completely different line here"  # nothing to pair it with


def test_rewritten_lines_are_not_word_marked():
    hunk = Hunk(
        1, 1, 1, 1, "", [Line("del", "alpha beta gamma", 1, None), Line("add", "one two three", None, 1)]
    )
    diffhighlight.highlight_file(FileDiff("f.txt", "f.txt", hunks=[hunk]))
    assert [line.html for line in hunk.lines] == ["alpha beta gamma", "one two three"]


def test_a_multi_line_string_in_a_hunk_is_coloured_on_every_line():
    lines = [Line("context", 'doc = """first', 1, 1), Line("add", "<second> line", None, 2),
             Line("context", '"""', 2, 3)]  # fmt: skip
    diffhighlight.highlight_file(FileDiff("m.py", "m.py", hunks=[Hunk(1, 2, 1, 3, "", lines)]))
    assert lines[1].html == '<span class="s2">&lt;second&gt; line</span>'


def test_files_over_the_cap_are_plain_text(monkeypatch):
    monkeypatch.setattr(diffhighlight, "MAX_FILE_CHARS", 10)
    lines = [Line("add", "x = '<big>'", None, 1)]
    diffhighlight.highlight_file(FileDiff(None, "big.py", hunks=[Hunk(0, 0, 1, 1, "", lines)]))
    assert lines[0].html == ""  # the template escapes `text`
    page = render_to_string(
        "repos/_diff.html",
        {"diff": diffs.Diff(None, "h", [FileDiff(None, "big.py", hunks=[Hunk(0, 0, 1, 1, "", lines)])])},
    )
    assert "x = &#x27;&lt;big&gt;&#x27;" in page


def test_lexer_is_chosen_by_name_only():
    assert diffhighlight.lexer_for("src/app.py").name == "Python"
    assert diffhighlight.lexer_for("Makefile").name == "Makefile"
    assert diffhighlight.lexer_for("tmpl/page.html.j2").name != "Text only"
    assert diffhighlight.lexer_for("CMakeLists.txt").name == "CMake"
    assert diffhighlight.lexer_for("notes.txt") is None
    assert diffhighlight.lexer_for("#!/usr/bin/env python") is None  # no guessing


def test_text_pygments_would_rewrite_is_kept():
    texts = ["a = 1\r", "\ufeffb = 2", "\tc = '\r'"]
    lines = [Line("context", t, i, i) for i, t in enumerate(texts, 1)]
    diffhighlight.highlight_file(FileDiff("x.py", "x.py", hunks=[Hunk(1, 3, 1, 3, "", lines)]))
    assert [plain(line.html) for line in lines] == texts


def test_crlf_lines_are_highlighted():
    lines = [Line("add", "x = 'a'\r", None, 1), Line("add", "y = 2\r", None, 2)]
    diffhighlight.highlight_file(FileDiff(None, "w.py", hunks=[Hunk(0, 0, 1, 2, "", lines)]))
    assert (
        lines[0].html
        == '<span class="n">x</span> <span class="o">=</span> <span class="s1">&#x27;a&#x27;</span>\r'
    )


_LINE = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["a.py", "b.html", "c.c", "d.txt", "e.md", "f.js", "g.sh", "h.css"]),
    rows=st.lists(st.tuples(st.sampled_from(["context", "add", "del"]), _LINE), min_size=1, max_size=12),
)
def test_any_text_is_kept_exactly_and_only_our_markup_is_added(name, rows):
    lines = [Line(kind, text, 1, 1) for kind, text in rows]
    diffhighlight.highlight_file(FileDiff(name, name, hunks=[Hunk(1, 1, 1, 1, "", lines)]))
    for line in lines:
        assert plain(line.html) == line.text
        assert only_our_markup(line.html), line.html


def test_the_cache_serves_the_same_ids_without_git(repo, tmp_path):
    base = repo({"a.py": "x = 1\n"})
    head = repo({"a.py": "x = 2\n"})
    first = diffcache.highlighted_diff(repo.git_dir, base, head, max_files=10)
    first.files[0].hunks[0].lines[0].after = "per-request"  # what pages attach is not stored
    moved = tmp_path / "moved.git"
    shutil.move(repo.git_dir, moved)
    again = diffcache.highlighted_diff(repo.git_dir, base, head, max_files=10)
    assert [(x.kind, x.html) for x in again.files[0].hunks[0].lines] == [
        (x.kind, x.html) for x in first.files[0].hunks[0].lines
    ]
    assert again.files[0].hunks[0].lines[0].after == ""
    # Other caps are another entry, and names that could move are never cached.
    with pytest.raises(GitError):
        diffcache.highlighted_diff(repo.git_dir, base, head, max_files=11)
    shutil.move(moved, repo.git_dir)
    assert diffcache.highlighted_diff(repo.git_dir, base, "main").files[0].path == "a.py"


@pytest.mark.django_db  # the task is enqueued on commit: never, in a test's transaction
def test_a_page_highlights_within_its_budget_and_a_task_does_the_rest(repo, monkeypatch):
    base = repo({"a.py": "x = 1\n", "b.py": "y = 1\n", "c.txt": "plain 1\n"})
    head = repo({"a.py": "x = 2\n", "b.py": "y = 2\n", "c.txt": "plain 2\n"})
    monkeypatch.setattr(diffcache, "PAGE_BUDGET_CHARS", 12)  # a.py's two lines, not b.py's
    first = diffcache.highlighted_diff(repo.git_dir, base, head)
    a, b, _c = ([line.html for line in f.hunks[0].lines] for f in first.files)
    assert a == [
        '<span class="n">x</span> <span class="o">=</span> <del><span class="mi">1</span></del>',
        '<span class="n">x</span> <span class="o">=</span> <ins><span class="mi">2</span></ins>',
    ]
    assert b == ["y = <del>1</del>", "y = <ins>2</ins>"]  # word changes only
    assert diffcache.highlighted_diff(repo.git_dir, base, head).files[1].hunks[0].lines[0].html == b[0]
    # Plain text costs no budget: a diff of text files alone is complete at once.
    text_only = gitdiff.diff(repo.git_dir, base, head, paths=["c.txt"])
    assert diffhighlight.highlight_diff(text_only, budget=0)
    tasks.highlight_diff(str(repo.git_dir), base, head, {}, [])  # what the page enqueued
    again = diffcache.highlighted_diff(repo.git_dir, base, head)
    assert again.files[1].hunks[0].lines[0].html.startswith('<span class="n">y</span>')


def test_rows_are_those_the_template_made_and_escape_what_is_not_safe(repo):
    base = repo({"a.txt": "one\n<two> & 'x'\n"})
    head = repo({"a.txt": "one\n<three> & 'x'\n"})
    diff = diffcache.highlighted_diff(repo.git_dir, base, head)
    lines = diff.files[0].hunks[0].lines
    rows = diffrender.rows_html(diff.files[0])
    assert (
        '<tr class="context"><td class="ln">1</td><td class="ln">1</td><td class="code"> one</td></tr>'
        in rows
    )
    assert '<td class="code">+&lt;<ins>three</ins>&gt; &amp; &#x27;x&#x27;</td>' in rows
    lines[0].after = "<b>not safe</b>"
    lines[1].after = mark_safe("<b>safe</b>")
    rows = diffrender.rows_html(diff.files[0])
    assert '<td colspan="3">&lt;b&gt;not safe&lt;/b&gt;</td>' in rows
    assert '<td colspan="3"><b>safe</b></td>' in rows
