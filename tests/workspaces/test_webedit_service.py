"""The web editor's service with real git and a real database: every kind of change landing as
a commit with the right tree, the file's encoding, line endings and mode kept, every other
tree entry untouched, stale edits refused, and the ref moved only where a push could move it."""

from __future__ import annotations

import pytest

from repos.errors import InvalidInput, NotFound
from repos.models import Push, RefUpdate
from tests.workspaces.webedit_support import (
    NON_UTF8,
    assert_nothing_happened,
    assert_only_changed,
    blob_id,
    edit,
    request,
)

# The fixtures, by name (pytest finds them in the module).
from tests.workspaces.webedit_support import scene as scene
from tests.workspaces.webedit_support import seed as seed
from tests.workspaces.webedit_support import small_limit as small_limit
from workspaces.webedit import service
from workspaces.webedit.types import FileChange

pytestmark = pytest.mark.django_db


# --- editable ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("README.md", {"text": "# Project\n\nHello.\n", "eol": "lf", "encoding": "utf-8", "mode": "100644"}),
        ("crlf.txt", {"text": "one\ntwo\n", "eol": "crlf"}),
        ("mixed.txt", {"text": "a\nb\nc\n", "eol": "mixed"}),
        ("bom.txt", {"text": "with bom\n", "encoding": "utf-8-sig"}),
        ("utf16.txt", {"text": "h\u00e9llo\n", "encoding": "utf-16-le", "eol": "crlf"}),
        ("run.sh", {"mode": "100755", "text": "#!/bin/sh\necho hi\n"}),
        ("image.bin", {"binary": True, "text": None}),
        ("latin1.txt", {"binary": True, "text": None}),
        ("oldmac.txt", {"binary": False, "text": None}),
        ("big.txt", {"too_large": True, "text": None}),
        ("link", {"mode": "120000", "text": None}),
        ("sub", {"mode": "160000", "text": None}),
        ("docs", {"blob": None, "text": None}),
        ("nope.txt", {"blob": None, "text": None}),
        (NON_UTF8.decode("utf-8", "surrogateescape"), {"text": "non-UTF-8 name\n"}),
        ("old/legacy.txt", {"mode": "100644", "text": "legacy\n"}),
    ],
)
def test_editable(scene, path, expected):
    found = service.editable(scene.repo, scene.main, path)
    for name, value in expected.items():
        assert getattr(found, name) == value, name
    assert (found.text is None) == bool(found.reasons)


def test_editable_refuses_unknown_commits(scene):
    for commit in ("main", scene.main[:12], "0" * 40, "--output=x"):
        with pytest.raises(NotFound):
            service.editable(scene.repo, commit, "README.md")


# --- each kind of change -----------------------------------------------------------------------


def test_edit_lands_in_a_new_workspace_ref_touching_nothing_else(scene):
    result = service.commit_changes(edit(scene, "README.md", b"# Project\r\n\r\nHello, web.\r\n"))
    assert result.ref == "refs/users/alice/web-edit" and result.created
    assert scene.refs()[result.ref] == result.commit
    assert scene.refs()["refs/heads/main"] == scene.main  # the branch did not move
    assert scene.blob(result.commit, "README.md") == b"# Project\n\nHello, web.\n"
    assert scene.show(result.commit, "%P") == scene.main
    assert scene.show(result.commit, "%an <%ae>|%cn <%ce>") == (
        "alice <alice@users.noreply.git.example.org>|alice <alice@users.noreply.git.example.org>"
    )
    assert scene.show(result.commit, "%B") == "Edit on the web"
    assert_only_changed(scene, scene.main, result.commit, {b"README.md"})
    # Trees off the changed path are the very same objects: the legacy mode is kept byte for byte.
    assert b"100664 legacy.txt" in scene.raw_tree(f"{result.commit}:old")
    assert scene.git("rev-parse", f"{result.commit}:old") == scene.git("rev-parse", f"{scene.main}:old")

    push = Push.objects.get(pk=result.push_id)
    assert push.protocol == "web" and push.pusher == scene.alice and push.touches_workspace
    assert [(u.ref, u.old, u.new) for u in RefUpdate.objects.filter(push=push)] == [
        (result.ref, "0" * 40, result.commit)
    ]
    assert (
        result.proposal_url == "/owner/project/proposals/new?ref=refs%2Fusers%2Falice%2Fweb-edit&target=main"
    )


@pytest.mark.parametrize(
    ("path", "typed", "stored"),
    [
        ("crlf.txt", b"one\r\ntwo\r\nthree\r\n", b"one\r\ntwo\r\nthree\r\n"),
        ("crlf.txt", b"one\ntwo\nthree\n", b"one\r\ntwo\r\nthree\r\n"),
        ("mixed.txt", b"a\nb\nc\nd\n", b"a\r\nb\r\nc\r\nd\r\n"),  # the majority's ending
        ("bom.txt", b"still bom\r\n", b"\xef\xbb\xbfstill bom\n"),
        ("bom.txt", "\ufeffstill bom\n".encode(), b"\xef\xbb\xbfstill bom\n"),  # never two BOMs
        (
            "utf16.txt",
            "h\u00e9llo w\u00f6rld\r\n".encode(),
            b"\xff\xfe" + "h\u00e9llo w\u00f6rld\r\n".encode("utf-16-le"),
        ),
        ("README.md", b"lone\rcr\n", b"lone\ncr\n"),
    ],
)
def test_edit_keeps_encoding_and_line_endings(scene, path, typed, stored):
    result = service.commit_changes(edit(scene, path, typed))
    assert scene.blob(result.commit, path) == stored
    assert_only_changed(scene, scene.main, result.commit, {path.encode()})


def test_edit_keeps_the_executable_bit_and_a_non_utf8_name(scene):
    name = NON_UTF8.decode("utf-8", "surrogateescape")
    result = service.commit_changes(
        request(
            scene,
            FileChange("edit", "run.sh", b"#!/bin/sh\necho bye\n", blob_id(scene, "run.sh")),
            FileChange("edit", name, b"edited\n"),
        )
    )
    entries = scene.entries(result.commit)
    assert entries[b"run.sh"].startswith(b"100755 blob")
    assert scene.blob(result.commit, "run.sh") == b"#!/bin/sh\necho bye\n"
    assert entries[NON_UTF8].startswith(b"100644 blob")
    assert_only_changed(scene, scene.main, result.commit, {b"run.sh", NON_UTF8})


def test_add_upload_and_delete(scene):
    result = service.commit_changes(
        request(
            scene,
            FileChange("add", "docs/new/page.md", b"New\r\npage\r\n"),
            FileChange("upload", "assets/logo.png", b"\x89PNG\x00\x01\x02"),
            FileChange("upload", "image.bin", b"\x00new binary", blob_id(scene, "image.bin")),
            FileChange("delete", "latin1.txt", expected_blob=blob_id(scene, "latin1.txt")),
            FileChange("delete", "docs/guide"),  # a whole directory
        )
    )
    entries = scene.entries(result.commit)
    assert entries[b"docs/new/page.md"].startswith(b"100644 blob")
    assert scene.blob(result.commit, "docs/new/page.md") == b"New\npage\n"  # new files: LF
    assert scene.blob(result.commit, "assets/logo.png") == b"\x89PNG\x00\x01\x02"
    assert scene.blob(result.commit, "image.bin") == b"\x00new binary"
    assert b"latin1.txt" not in entries and b"docs/guide/deep.md" not in entries
    assert b"docs/intro.md" in entries  # the directory's other entries stay
    assert_only_changed(
        scene,
        scene.main,
        result.commit,
        {b"docs/new/page.md", b"assets/logo.png", b"image.bin", b"latin1.txt", b"docs/guide/deep.md"},
    )


def test_deleting_every_file_leaves_an_empty_tree(scene):
    entries = scene.entries(scene.main)
    tops = sorted({name.split(b"/")[0] for name in entries})
    changes = [FileChange("delete", top.decode("utf-8", "surrogateescape")) for top in tops]
    result = service.commit_changes(request(scene, *changes))
    assert scene.entries(result.commit) == {}
    assert (
        scene.git("rev-parse", f"{result.commit}^{{tree}}").strip()
        == scene.git("hash-object", "-t", "tree", "/dev/null").strip()
    )


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (FileChange("edit", "image.bin", b"text now"), "binary"),
        (FileChange("edit", "latin1.txt", b"caf\xc3\xa9\n"), "binary"),
        (FileChange("edit", "oldmac.txt", b"one\ntwo\n"), "not_editable"),
        (FileChange("edit", "big.txt", b"small\n"), "too_large"),
        (FileChange("edit", "README.md", b"x" * 3000), "too_large"),
        (FileChange("add", "new.txt", b"x" * 3000), "too_large"),
        (FileChange("edit", "README.md", b"\xff\xfe not utf-8"), "invalid"),
        (FileChange("edit", "link", b"elsewhere"), "invalid"),
        (FileChange("edit", "sub", b"x"), "invalid"),
        (FileChange("upload", "link", b"x"), "invalid"),
        (FileChange("edit", "docs", b"x"), "invalid"),
        (FileChange("edit", "missing.txt", b"x"), "invalid"),
        (FileChange("delete", "missing.txt"), "invalid"),
        (FileChange("add", "README.md", b"again"), "invalid"),
        (FileChange("add", "docs", b"a file where a directory is"), "invalid"),
        (FileChange("add", "README.md/inside", b"under a file"), "invalid"),
        (FileChange("upload", "run.sh/x", b"under a file"), "invalid"),
        (FileChange("edit", "README.md", None), "invalid"),
        (FileChange("delete", "README.md", b"content"), "invalid"),
        (FileChange("rename", "README.md", b"x"), "invalid"),  # type: ignore[arg-type]
        (FileChange("edit", "README.md", b"x", expected_blob="abc"), "invalid"),
    ],
)
def test_refused_changes_change_nothing(scene, change, code):
    refs = scene.refs()
    with pytest.raises(InvalidInput) as caught:
        service.commit_changes(request(scene, change))
    assert caught.value.code == code, caught.value.message
    assert_nothing_happened(scene, refs)


def test_an_edit_that_changes_nothing_is_refused(scene):
    with pytest.raises(InvalidInput) as caught:
        service.commit_changes(edit(scene, "README.md", b"# Project\n\nHello.\n"))
    assert caught.value.code == "no_changes"
