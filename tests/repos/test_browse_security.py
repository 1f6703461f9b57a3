"""Browsing pages under attack: hostile commit messages, file names, branch names, file
contents and READMEs render inert; private repositories stay 404; bad input is a 404 or 400,
never a 500."""

from __future__ import annotations

import os
import re

import pytest
from django.test import Client

from gitcore.git import run_git
from repos import services
from repos.models import Repository, Role
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

EVIL_NAME = "<img src=x onerror=alert(1)>.txt"
EVIL_BRANCH = 'x"><svg/onload=alert(5)>'
EVIL_README = """# Title <script>alert('readme')</script>

[click](javascript:alert(6)) [click2](JaVaScRiPt:alert(7)) [data](data:text/html;base64,PHNjcmlwdD4=)

<img src="x" onerror="alert(8)"> <iframe src="https://evil.example"></iframe>
<style>body { display: none }</style> <div onclick="alert(9)" style="color:red">styled</div>
<a href="https://ok.example" onmouseover="alert(10)">ok link</a> <form action="/x"><input name="a"></form>
"""


@pytest.fixture
def evil(tmp_path, git_home):
    work = Work(tmp_path / "evil", git_home)
    work.commit(
        "<script>alert('subject')</script>\n\n<img src=x onerror=alert(2)> in the body",
        {
            EVIL_NAME: "<script>alert(3)</script>\n",
            "page.html": "<html><script>alert(4)</script></html>\n",
            "README.md": EVIL_README,
        },
    )
    work.git("branch", EVIL_BRANCH)
    work.publish(owner="mallory", name="evil")
    return work


# An HTML tag (not escaped text) that carries an event handler, or a javascript: URL anywhere
# in an attribute. Handlers are looked for outside double-quoted attribute values: an escaped
# value (data-path="&lt;img onerror=…") cannot end its quotes, so what it holds is only text.
ACTIVE_TAG = re.compile(r"<[a-z][^<>]*\son[a-z]+\s*=", re.IGNORECASE)
QUOTED_VALUE = re.compile(r'="[^"]*"')
SCRIPT_URL = re.compile(r"""(href|src|action)\s*=\s*["']?\s*(javascript|data|vbscript):""", re.IGNORECASE)


# The site's own icons: an <svg> whose whole content is one <use> of our static sprite.
OWN_ICON = re.compile(r'<svg [^<>]*><use href="/static/img/icons\.svg#i-[a-z-]+"/></svg>')


def assert_inert(page: str) -> None:
    lowered = OWN_ICON.sub("", page).lower()
    assert "<script>alert" not in lowered and "<iframe" not in lowered and "<svg" not in lowered
    assert "<style>body" not in lowered and "<form action" not in lowered
    unquoted = QUOTED_VALUE.sub('=""', page)
    assert not ACTIVE_TAG.search(unquoted), ACTIVE_TAG.search(unquoted)[0]
    assert not SCRIPT_URL.search(page), SCRIPT_URL.search(page)[0]


def page_of(url: str) -> str:
    response = Client().get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def test_hostile_content_renders_inert_everywhere(evil):
    sha = evil.git("rev-parse", "HEAD")
    quoted_name = "%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E.txt"
    branch_url = "x%22%3E%3Csvg/onload%3Dalert%285%29%3E"
    urls = [
        "/mallory/evil",
        "/mallory/evil/tree/main",
        f"/mallory/evil/blob/main/{quoted_name}",
        "/mallory/evil/blob/main/page.html",
        "/mallory/evil/blob/main/README.md",
        "/mallory/evil/commits/main",
        f"/mallory/evil/commit/{sha}",
        f"/mallory/evil/tree/{branch_url}",
        f"/mallory/evil/compare/main...{branch_url}",
        f"/mallory/evil/commits/{branch_url}",
    ]
    for url in urls:
        assert_inert(page_of(url))
    commit = page_of(f"/mallory/evil/commit/{sha}")
    assert "&lt;script&gt;alert(&#x27;subject&#x27;)&lt;/script&gt;" in commit
    assert "&lt;img src=x onerror=alert(2)&gt; in the body" in commit
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in commit  # the file name in the diff
    assert "+&lt;script&gt;alert(3)&lt;/script&gt;" in commit  # the file content in the diff
    tree = page_of("/mallory/evil/tree/main")
    assert f'href="/mallory/evil/blob/main/{quoted_name}"' in tree
    assert "&lt;img src=x onerror=alert(1)&gt;.txt</a>" in tree
    branch = page_of(f"/mallory/evil/tree/{branch_url}")
    assert "x&quot;&gt;&lt;svg/onload=alert(5)&gt;" in branch


def test_markdown_readme_is_sanitized(evil):
    readme = (
        page_of("/mallory/evil/tree/main").split('<div class="markdown">', 1)[1].split("</section>", 1)[0]
    )
    assert_inert(readme)
    assert "<h1>Title </h1>" in readme and "styled" in readme and 'style="' not in readme
    assert '<a href="https://ok.example" rel="nofollow noopener">ok link</a>' in readme
    assert "<img" in readme and "onerror" not in readme


def test_raw_html_is_served_as_sandboxed_text(evil):
    response = Client().get("/mallory/evil/raw/main/page.html")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert (
        "sandbox" in response["Content-Security-Policy"]
        and "default-src 'none'" in response["Content-Security-Policy"]
    )


def test_names_that_are_not_utf8_are_listed_and_reachable(tmp_path, git_home):
    work = Work(tmp_path / "bytes", git_home)
    name = os.fsdecode(b"caf\xe9.txt")
    (work.path / name).write_bytes(b"latin-1 name\n")
    work.git("add", "--", name)
    work.commit("a latin-1 file name")
    work.publish()
    tree = page_of("/olga/proj/tree/main")
    assert 'href="/olga/proj/blob/main/caf%E9.txt"' in tree and "caf\ufffd.txt" in tree
    assert b"".join(Client().get("/olga/proj/raw/main/caf%E9.txt").streaming_content) == b"latin-1 name\n"


@pytest.fixture
def private(tmp_path, git_home):
    work = Work(tmp_path / "secret", git_home)
    work.commit("secret", {"dir/file.txt": "s\n"})
    repo = work.publish(owner="pat", name="secret", private=True)
    return repo, work.git("rev-parse", "HEAD")


PRIVATE_URLS = [
    "tree/main",
    "tree/main/dir",
    "blob/main/dir/file.txt",
    "raw/main/dir/file.txt",
    "commits",
    "commits/main",
    "commits/main/dir",
    "commit/{sha}",
    "compare/main...main",
    "compare/main",
    "archive/main.tar.gz",
    "archive/main.tar.zst",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_repositories_are_404_to_outsiders(private, url):
    repo, sha = private
    full = f"/pat/secret/{url.format(sha=sha)}"
    assert Client().get(full).status_code == 404
    outsider = Client()
    outsider.force_login(UserFactory(username="outsider"))
    assert outsider.get(full).status_code == 404
    member = UserFactory(username="member")
    services.membership_set(repo=repo, user=member, role=Role.from_label("reader"))
    reader = Client()
    reader.force_login(member)
    assert reader.get(full).status_code == 200


@pytest.fixture
def plain(tmp_path, git_home):
    work = Work(tmp_path / "plain", git_home)
    work.commit("one", {"dir/file.txt": "x\n", "abc.txt": "y\n"})
    work.publish()
    return work


BAD = [
    "tree/main/../abc.txt",
    "tree/main/dir/..",
    "tree/main/%2e%2e/abc.txt",
    "tree/main/dir//file.txt",
    "tree/main/./abc.txt",
    "blob/main/%00",
    "blob/main/dir/file.txt%00",
    "tree/nope",
    "tree/-x",
    "tree/main~1",
    "tree/HEAD^",
    "tree/main:abc.txt",
    "tree/main@{{1}}",
    "tree/..",
    "raw/main/nope",
    "raw/main/dir",
    "commits/main?page=0",
    "commits/main?page=-1",
    "commits/main?page=abc",
    "commits/main?page=99999999999999999999",
    "commits/main?page=10000",
    "commits/main?page=2",
    "commits/nope",
    "commits/main/nope.txt",
    "commit/xyz",
    "commit/123",
    "commit/" + "a" * 65,
    "commit/ffff",
    "commit/" + "0" * 40,
    "commit/main",
    "commit/{sha}?file=%00",
    "commit/{sha}?file=a&file=b&file=c",
    "compare/main...nope",
    "compare/...main",
    "compare/main....x",
    "compare/main...-x",
    "compare/main..main",
    "compare/main...refs/archive/olga/x",
    "archive/refs/archive/olga/x.tar.gz",
    "tree/refs/archive/olga/x",
    "archive/main.tar.bz2",
    "archive/main",
    "archive/nope.tar.gz",
    "archive/-x.tar.gz",
    "archive/main~1.tar.gz",
]


@pytest.mark.parametrize("url", BAD)
def test_bad_input_is_a_clean_404_or_400(plain, url):
    sha = plain.git("rev-parse", "HEAD")
    # An archived ref exists: full names outside branches, tags and workspaces are not browsable
    # (workspace refs by full name: tests/repos/test_navigation.py).
    run_git(["update-ref", "refs/archive/olga/x", sha], repo=Repository.objects.get(name="proj").disk_path)
    response = Client().get(f"/olga/proj/{url.format(sha=sha)}")
    assert response.status_code in (400, 404), (url, response.status_code)
