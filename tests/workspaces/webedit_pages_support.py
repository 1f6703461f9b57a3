"""The web editor's pages as a browser without JavaScript uses them, and the scene they are
used on (a repository imported from `build_history`, with its users): GET a page, read its form
(hidden fields, prefilled values, the checked choice), change some fields, POST it back with
the page's CSRF token through a client that enforces CSRF."""

from __future__ import annotations

import os
from html.parser import HTMLParser
from pathlib import Path

from django.test import Client

from gitcore.git import run_git
from gitcore.gittools import rev_parse
from repos import services as repo_services
from repos.models import Role, Visibility
from sources import importing
from tests.factories import UserFactory
from tests.gitutil import git
from tests.repos.histories import Work

XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


class FormReader(HTMLParser):
    """The fields of the editor's form (id="webedit-form")."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields: dict[str, str] = {}
        self.choices: dict[str, list[str]] = {}
        self._in_form = False
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "webedit-form":
            self._in_form = True
        if not self._in_form:
            return
        name = a.get("name")
        if tag == "input" and name and a.get("type") not in ("file", "submit"):
            if a.get("type") == "radio":
                self.choices.setdefault(name, []).append(a.get("value") or "")
                if "checked" in a:
                    self.fields[name] = a.get("value") or ""
            else:
                self.fields[name] = a.get("value") or ""
        elif tag == "textarea" and name:
            self._textarea = name
            self.fields[name] = ""

    def handle_data(self, data):
        if self._textarea:
            self.fields[self._textarea] += data

    def handle_endtag(self, tag):
        if tag == "textarea" and self._textarea:
            # The browser drops the one newline that follows <textarea>.
            self.fields[self._textarea] = self.fields[self._textarea].removeprefix("\n")
            self._textarea = None
        elif tag == "form":
            self._in_form = False


def read_form(html: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    reader = FormReader()
    reader.feed(html)
    return reader.fields, reader.choices


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def submit(client: Client, url: str, *, files=None, **changes):
    """GET the page, fill in `changes`, POST the form (multipart, as the page's form is)."""
    page = client.get(url)
    assert page.status_code == 200, (url, page.status_code)
    fields, _choices = read_form(page.content.decode())
    assert "csrfmiddlewaretoken" in fields, "the form carries no CSRF token"
    data: dict = {**fields, **changes}
    if files is not None:
        data["files"] = files
    return client.post(url, data)


def source(path: Path, env: dict[str, str]) -> Path:
    """A working copy whose history the tests import: text, CRLF, executable, binary, a
    symbolic link and a subdirectory."""
    work = Work(path, env)
    work.commit(
        "first",
        {
            "README.md": "# Project\n\nHello.\n",
            "docs/intro.md": "intro\n",
            "crlf.txt": "one\r\ntwo\r\n",
            "run.sh": "#!/bin/sh\necho hi\n",
            "logo.png": BINARY,
            "big.txt": "x" * 3000 + "\n",
        },
    )
    (path / "run.sh").chmod(0o755)
    os.symlink("README.md", path / "link")
    work.git("add", "run.sh", "link")
    work.commit("links and modes")
    work.git("tag", "v1")
    return path


def tip(repo, ref: str) -> str | None:
    return rev_parse(repo.disk_path, ref)


def show(repo, rev: str, env: dict[str, str]) -> str:
    return git(env, "--git-dir", str(repo.disk_path), "show", rev).stdout


def build_history(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The imported history and the git environment (a module-scoped fixture's value)."""
    home = tmp_path_factory.mktemp("home")
    env = {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.invalid",
    }
    return source(tmp_path_factory.mktemp("src") / "work", env), env


class Scene:
    def __init__(self, history, *, private: bool = False):
        path, self.env = history
        self.olga = UserFactory(username="olga")
        self.maud = UserFactory(username="maud")
        self.carl = UserFactory(username="carl")
        self.repo = importing.import_now(
            owner=self.olga,
            name="proj",
            source=str(path),
            visibility=Visibility.PRIVATE if private else Visibility.PUBLIC,
        ).repository
        repo_services.membership_set(repo=self.repo, user=self.maud, role=Role.MAINTAINER)
        if private:
            repo_services.membership_set(repo=self.repo, user=self.carl, role=Role.READER)
        self.main = tip(self.repo, "refs/heads/main")

    def file(self, rev: str, path: str) -> bytes:
        return run_git(["cat-file", "blob", f"{rev}:{path}"], repo=self.repo.disk_path).stdout

    def refs(self, prefix: str = "refs/users/") -> list[str]:
        out = run_git(["for-each-ref", "--format=%(refname)", prefix], repo=self.repo.disk_path).text
        return out.split()


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()
