"""Hostile input to the web editor's service (file paths, ref names, messages, commits) and
the identity of its commits."""

from __future__ import annotations

import pytest

from repos.errors import InvalidInput, NotFound
from repos.forms import ProfileForm
from repos.models import Push
from tests.workspaces.webedit_support import assert_nothing_happened, edit, request

# The fixtures, by name (pytest finds them in the module).
from tests.workspaces.webedit_support import scene as scene
from tests.workspaces.webedit_support import seed as seed
from tests.workspaces.webedit_support import small_limit as small_limit
from workspaces.webedit import service
from workspaces.webedit.types import FileChange

pytestmark = pytest.mark.django_db

README = b"# Project\n\nEdited.\n"


# --- hostile input -----------------------------------------------------------------------------

HOSTILE_PATHS = [
    "",
    "../outside",
    "docs/../../outside",
    "./README.md",
    "/etc/passwd",
    "docs//x",
    "docs/",
    ".git/config",
    ".GIT/hooks/pre-receive",
    "docs/.Git/x",
    ".git./x",
    ".git /x",
    "git~1/config",
    ".git::$INDEX_ALLOCATION/x",
    ".g\u200cit/config",
    "a\x00b",
    "a\nb",
    "a\rb",
    "a\x1b[31mb",
    "a\x85b",
    "a\\b",
    "x" * 4097,
    "a" * 256,
    "\u202egnp.exe",
    "zero\u200bwidth",
    "\udcff\ud800",
]


@pytest.mark.parametrize("path", HOSTILE_PATHS)
def test_hostile_paths_are_refused(scene, path):
    refs = scene.refs()
    with pytest.raises(InvalidInput):
        service.commit_changes(request(scene, FileChange("add", path, b"x\n")))
    assert_nothing_happened(scene, refs)


@pytest.mark.parametrize(
    "message", ["", " \n\t \n", "a\x00b", "red \x1b[31m", "fake\x0bline", "del\x7f", "c1\x85", "x" * 70000]
)
def test_bad_messages_are_refused(scene, message):
    with pytest.raises(InvalidInput):
        service.commit_changes(edit(scene, "README.md", README, message=message))
    assert not Push.objects.exists()


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        (
            "Fix\r\n\r\nSigned-off-by: A <a@example.invalid>\r\n",
            "Fix\n\nSigned-off-by: A <a@example.invalid>",
        ),
        ("Subject\r\rBody  \n", "Subject\n\nBody"),  # a lone CR is a line end, never kept
        ("  Tabs\tkept  ", "Tabs\tkept"),
    ],
)
def test_messages_are_normalised(scene, message, stored):
    result = service.commit_changes(edit(scene, "README.md", README, message=message))
    assert scene.show(result.commit, "%B") == stored
    assert "\r" not in scene.git("cat-file", "commit", result.commit)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "with space"}, "name"),
        ({"name": "bad..name"}, "name"),
        ({"name": "evil\u202eslug"}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "refs/heads/main"}, "name"),
        ({"name": "x.lock"}, "name"),
        ({"base_ref": "main^{tree}"}, "name"),
        ({"target": "elsewhere"}, "target"),
    ],
)
def test_bad_ref_names_are_refused(scene, fields, field):
    with pytest.raises(InvalidInput) as caught:
        service.commit_changes(edit(scene, "README.md", README, **fields))
    assert field in caught.value.fields
    assert not Push.objects.exists()


@pytest.mark.parametrize("commit", ["main", "HEAD", "--all", "0" * 40, "abc"])
def test_unknown_base_commits(scene, commit):
    with pytest.raises(NotFound):
        service.commit_changes(edit(scene, "README.md", README, base_commit=commit))


# --- identity and names ------------------------------------------------------------------------


def test_author_identity_defaults_and_profile_values(scene):
    alice = scene.alice
    assert service.author_identity(alice, "git.example.org:8443") == (
        "alice",
        "alice@users.noreply.git.example.org",
    )
    assert service.author_identity(alice, "") == ("alice", "alice@users.noreply.localhost")
    assert service.author_identity(alice, "[::1]:8000") == ("alice", "alice@users.noreply.localhost")
    alice.commit_name, alice.commit_email = "Alice Liddell", "alice@wonderland.example"
    assert service.author_identity(alice, "h") == ("Alice Liddell", "alice@wonderland.example")
    alice.commit_name, alice.commit_email = "Evil <x@y>", "bad\n@example.org"  # stored by other means
    assert service.author_identity(alice, "h") == ("alice", "alice@users.noreply.h")
    alice.commit_name, alice.commit_email = "Alice Liddell", "alice@wonderland.example"
    alice.save()
    result = service.commit_changes(edit(scene, "README.md", README))
    assert scene.show(result.commit, "%an <%ae>|%cn <%ce>") == (
        "Alice Liddell <alice@wonderland.example>|Alice Liddell <alice@wonderland.example>"
    )


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        ({"commit_name": "Alice Liddell", "commit_email": "alice@example.org"}, True),
        ({"commit_name": "", "commit_email": ""}, True),
        ({"commit_name": "Evil <root@example.org>", "commit_email": ""}, False),
        ({"commit_name": "two\nlines", "commit_email": ""}, False),
        ({"commit_name": "...", "commit_email": ""}, False),
        ({"commit_name": "", "commit_email": '"a<b>"@example.org'}, False),
        ({"commit_name": "", "commit_email": "not an address"}, False),
    ],
)
def test_profile_form_validates_the_commit_identity(scene, data, valid):
    form = ProfileForm(
        {"display_name": "", "email": "alice@example.invalid", "bio": "", **data}, instance=scene.alice
    )
    assert form.is_valid() == valid, form.errors


def test_suggest_name(scene):
    alice = scene.alice
    assert service.suggest_name(scene.repo, alice, "edit", "README.md") == "edit-readme"
    assert service.suggest_name(scene.repo, alice, "add", "docs/intro.md") == "add-docs-intro"
    assert service.suggest_name(scene.repo, alice, "delete", ".gitignore") == "delete-gitignore"
    assert service.suggest_name(scene.repo, alice, "upload", "\u00e9t\u00e9/\u65e5\u672c.png") == "upload-ete"
    service.commit_changes(edit(scene, "README.md", README, name="edit-readme"))
    service.commit_changes(edit(scene, "README.md", README, name="edit-readme-2/nested"))
    assert service.suggest_name(scene.repo, alice, "edit", "README.md") == "edit-readme-3"
    assert service.suggest_name(scene.repo, scene.bob, "edit", "README.md") == "edit-readme"


def test_objects_a_push_would_refuse_are_refused(scene):
    """A web edit meets the object checks a push of the same commit meets: a `.gitmodules`
    whose submodule URL is a command-line option (CVE-2018-17456) is refused, as
    receive.fsckObjects refuses it, and a harmless one is accepted."""
    refs = scene.refs()
    evil = b'[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwned\n'
    with pytest.raises(InvalidInput) as caught:
        service.commit_changes(request(scene, FileChange("add", ".gitmodules", evil)))
    assert caught.value.code == "object_check" and "gitmodulesUrl" in str(caught.value), caught.value
    assert_nothing_happened(scene, refs)
    fine = b'[submodule "x"]\n\tpath = x\n\turl = https://example.com/x.git\n'
    result = service.commit_changes(request(scene, FileChange("add", ".gitmodules", fine)))
    assert scene.refs()[result.ref] == result.commit
