"""Both engines (the suite's database decides which: SQLite by default, PostgreSQL in CI) find
code, commits, repositories, proposals and users, and take every input as a literal."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection

from search import backend
from search.query import QueryError, parse
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ANON = AnonymousUser()


def found(kind, text, user=ANON, regex=False):
    query = parse(text, regex=regex)
    return backend.find(kind, query, user, 0, 50)


def titles(kind, text, user=ANON, regex=False):
    return [hit.title for hit in found(kind, text, user, regex)]


def test_code_literal_finds_files_and_lines(make_work):
    work = make_work()
    sha = work.write(
        {
            "src/app.py": "import os\n\ndef handle_request(req):\n    return req\n",
            "README.md": "# Project\nCall handle_request to serve.\n",
            "data.bin": b"\x00\x01handle_request\x00",
        }
    )
    outcome = work.index()
    assert outcome.files_written == 2  # the binary file is skipped
    hits = found("code", "HANDLE_request")  # any case
    assert {hit.title for hit in hits} == {"src/app.py", "README.md"}
    app = next(hit for hit in hits if hit.title == "src/app.py")
    assert [line.number for line in app.lines] == [3]
    assert app.url == f"/owner/project/blob/{sha}/src/app.py#L3"
    assert "<mark>handle_request</mark>" in str(app.lines[0].html)
    assert backend.count("code", parse("handle_request"), ANON) == 2


@pytest.mark.parametrize(
    "text",
    ["it's", 'say "hi"', "100%", "a_b", "back\\slash", "x OR y", "NEAR(a b)", "ab*", "-- ;DROP TABLE x"],
)
def test_code_inputs_are_literals(make_work, text):
    work = make_work()
    work.write({"hit.txt": f"before {text} after\n", "miss.txt": "before it is 100 percent ab after\n"})
    work.index()
    assert titles("code", text) == ["hit.txt"]


def test_wildcards_do_not_widen_a_literal(make_work):
    work = make_work()
    work.write({"a.txt": "abc_def\n", "b.txt": "abcXdef\n", "c.txt": "abc%def\n"})
    work.index()
    assert titles("code", "abc_def") == ["a.txt"]
    assert titles("code", "abc%def") == ["c.txt"]


def test_short_literals_and_nul_are_refused(make_work):
    with pytest.raises(QueryError, match="at least 3"):
        backend.count("code", parse("ab"), ANON)
    with pytest.raises(QueryError, match="NUL"):
        parse("abc\0def")
    with pytest.raises(QueryError):
        parse("x" * 300)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="regular expressions need PostgreSQL")
def test_regex_on_postgres(make_work):
    work = make_work()
    work.write({"a.c": "int main(void) { return 42; }\n", "b.c": "int helper(int x);\n"})
    work.index()
    assert titles("code", r"main\(\w+\)", regex=True) == ["a.c"]
    assert titles("code", r"return [0-9]+;", regex=True) == ["a.c"]
    # PostgreSQL's own syntax (\m: start of a word), and its refusals as messages.
    assert titles("code", r"\mhelper", regex=True) == ["b.c"]
    for bad in ("(unclosed", "a{2,1}", "[z-a]"):
        with pytest.raises(QueryError, match="regular expression"):
            found("code", bad, regex=True)


def test_regex_refused_where_the_engine_has_none(make_work):
    if connection.vendor == "postgresql":
        with pytest.raises(QueryError, match="Regular expressions search code only"):
            backend.count("commits", parse("a+", regex=True), ANON)
    else:
        with pytest.raises(QueryError, match="PostgreSQL"):
            backend.count("code", parse("a+", regex=True), ANON)


def test_non_utf8_paths(make_work):
    work = make_work()
    name = b"caf\xe9-notes.txt"  # Latin-1, not UTF-8
    sha = work.write({name: "needle in latin-1 land\n", "ok.txt": "nothing\n"})
    work.index()
    (hit,) = found("code", "needle")
    assert hit.title == "caf\ufffd-notes.txt"
    assert hit.url == f"/owner/project/blob/{sha}/caf%E9-notes.txt#L1"
    # The page the link names shows the file.
    from django.test import Client

    assert Client().get(hit.url.split("#")[0]).status_code == 200


def test_large_files_are_skipped(make_work, settings):
    settings.SITE_SEARCH_MAX_FILE_BYTES = 1000
    work = make_work()
    work.write({"big.txt": "needle\n" + "x" * 2000, "small.txt": "needle\n"})
    work.index()
    assert titles("code", "needle") == ["small.txt"]


def test_commits_by_message_author_and_id_prefix(make_work):
    work = make_work()
    first = work.write({"a.txt": "a"}, message="Fix the frobnicator overflow")
    work.write({"b.txt": "b"}, message="Unrelated change")
    work.index()
    assert titles("commits", "frobnicator") == ["Fix the frobnicator overflow"]
    assert len(found("commits", "author@example.invalid")) == 2
    assert [hit.data["sha"] for hit in found("commits", first[:8])] == [first]
    assert found("commits", '"; DROP TABLE search_commitentry; --') == []


def test_commits_of_canonical_branches_only(make_work):
    work = make_work()
    work.write({"a.txt": "a"}, message="On main")
    work.write({"b.txt": "b"}, message="On a feature branch", branch="feature")
    work.write({"c.txt": "c"}, message="Workspace only draft", branch="scratch")
    work.publish("refs/users/alice/draft")
    # refs/heads/scratch was published too; remove it so the last commit is workspace-only.
    from gitcore.git import run_git

    run_git(["update-ref", "-d", "refs/heads/scratch"], repo=work.repo.disk_path)
    work.index()
    assert titles("commits", "feature") == ["On a feature branch"]
    assert titles("commits", "draft") == []


def test_commits_are_indexed_in_capped_runs(make_work):
    work = make_work()
    for i in range(7):
        work.write({"f.txt": str(i)}, message=f"step number{i}")
    from search import indexing

    runs = []
    while True:
        outcome = indexing.index_update(repo=work.repo, commits_per_run=3)
        runs.append(outcome.commits)
        if not outcome.more:
            break
    assert runs == [3, 3, 1]
    assert len(found("commits", "step")) == 7
    # Again: nothing left to do.
    assert indexing.index_update(repo=work.repo).commits == 0


def test_repositories_users_and_proposals(make_work):
    work = make_work("frobnicator", description="A tool that twiddles widgets")
    UserFactory(username="zelda", display_name="Princess Zelda")
    assert titles("repositories", "widgets") == ["owner/frobnicator"]
    assert titles("repositories", "frob") == ["owner/frobnicator"]  # part of a name
    assert titles("users", "princess") == ["zelda"]
    from reviews.models import Proposal

    Proposal.objects.create(
        repository=work.repo,
        number=7,
        author=work.repo.owner,
        source_ref="refs/users/owner/x",
        target_branch="main",
        title="Teach the frobnicator to sing",
        description="Adds vocal cords",
    )
    assert titles("proposals", "vocal") == ["Teach the frobnicator to sing"]
    assert titles("proposals", "#7") == ["Teach the frobnicator to sing"]
    assert titles("proposals", 'vocal" OR "x') == []
