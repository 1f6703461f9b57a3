"""The web editor's pages refusing what they must, with Django's client (CSRF enforced):
hostile file names and messages, upload limits, refusals as for pushes, stale edits on the
conflict page, and everything user-provided shown as text."""

from __future__ import annotations

import pytest

from gitcore.git import run_git
from tests.factories import UserFactory
from tests.workspaces.webedit_pages_support import (
    XSS,
    Scene,
    build_history,
    page,
    read_form,
    signed_in,
    submit,
    tip,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory)


@pytest.fixture
def scene(history):
    return Scene(history)


@pytest.mark.parametrize(
    "filename",
    [
        "../escape.txt",
        "/etc/passwd",
        ".git/config",
        "sub/.GIT/hooks/x",
        "a//b",
        "x" * 300,
        "a\nb.txt",
        "a\x00b.txt",
        "evil\u202etxt.exe",  # a bidirectional override
        "intro.md",  # exists: an edit, not an add
        "intro.md/inside",  # under a file
        "",
    ],
)
def test_hostile_file_names_are_refused_with_the_text_kept(scene, filename):
    client = signed_in(scene.carl)
    typed = f"kept {XSS}\n"
    response = submit(client, "/olga/proj/new/main/docs", filename=filename, content=typed)
    assert response.status_code == 400, filename
    html = response.content.decode()
    fields, _ = read_form(html)
    assert fields["content"].replace("\r\n", "\n") == typed and XSS not in html
    assert 'class="error"' in html or 'class="errors"' in html
    assert scene.refs() == []


@pytest.mark.parametrize("message", ["Fix\x00\nSigned-off-by: x", "Fix\x1b[2K\rSigned-off-by: x"])
def test_control_characters_in_the_message_are_refused(scene, message):
    client = signed_in(scene.carl)
    response = submit(client, "/olga/proj/edit/main/README.md", content="x\n", message=message)
    assert response.status_code == 400 and scene.refs() == []
    assert 'class="error"' in response.content.decode()


def test_a_stale_edit_gets_the_conflict_page_with_the_text_kept(scene):
    client = signed_in(scene.maud)
    fields, _ = read_form(page(client, "/olga/proj/edit/main/README.md"))
    # Meanwhile someone else changes the file on main.
    other = submit(
        signed_in(scene.olga), "/olga/proj/edit/main/README.md", content="# Theirs\n", target="branch"
    )
    assert other.status_code == 302
    moved = tip(scene.repo, "refs/heads/main")
    typed = f"# Mine {XSS}\n"
    response = client.post("/olga/proj/edit/main/README.md", {**fields, "content": typed, "target": "branch"})
    assert response.status_code == 409
    html = response.content.decode()
    assert 'id="conflict"' in html and "+# Theirs" in html and "-# Project" in html
    assert "# Mine &lt;img src=x onerror=alert(1)&gt;" in html and XSS not in html
    assert 'href="/olga/proj/edit/main/README.md"' in html  # load the current version
    assert tip(scene.repo, "refs/heads/main") == moved and scene.refs() == []


def test_editor_shows_file_content_and_names_as_text(scene):
    client = signed_in(scene.maud)
    assert (
        submit(
            client, "/olga/proj/new/main", filename="x.html", content=f"</textarea>{XSS}", target="branch"
        ).status_code
        == 302
    )
    html = page(client, "/olga/proj/edit/main/x.html")
    assert XSS not in html and "&lt;/textarea&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    fields, _ = read_form(html)
    assert fields["content"] == f"</textarea>{XSS}"


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def test_upload_limits(scene, settings):
    settings.WEB_EDIT_MAX_BYTES = 1024
    settings.WEB_UPLOAD_MAX_BYTES = 8 * 1024
    client = signed_in(scene.carl)
    for files, words in (
        ([_upload("big.bin", b"x" * 2000)], "larger than"),
        ([_upload(f"f{i}.txt", b"x") for i in range(21)], "At most 20"),
        ([_upload("a.txt", b"1"), _upload("dir/a.txt", b"2")], "Two files"),
        ([_upload(".git", b"x")], ".git"),
    ):
        response = submit(client, "/olga/proj/upload/main", files=files)
        assert response.status_code == 400 and words in response.content.decode(), words
    fields, _ = read_form(page(client, "/olga/proj/upload/main"))
    response = client.post(
        "/olga/proj/upload/main",
        {**fields, "files": [_upload(f"f{i}.bin", b"x" * 10_000) for i in range(9)]},
    )
    assert response.status_code == 413 and b"can be uploaded at once" in response.content
    assert scene.refs() == []


# --- refusals ------------------------------------------------------------------------------------


def _refused(response) -> str:
    assert response.status_code == 403, response.status_code
    html = response.content.decode()
    assert 'id="refused"' in html
    return html


def test_banned_users_and_frozen_or_taken_down_workspaces_are_refused_as_pushes_are(scene):
    from workspaces import moderation
    from workspaces.moderation_bans import do_ban_from_repository

    sam = UserFactory(username="sam", is_staff=True)
    bob = UserFactory(username="bob")
    do_ban_from_repository(repo=scene.repo, user=bob, acting_user=sam, reason="spam")
    html = _refused(submit(signed_in(bob), "/olga/proj/edit/main/README.md", content="x\n"))
    assert "banned" in html.lower()
    moderation.do_freeze_workspace(repo=scene.repo, user=scene.carl, acting_user=sam, reason="abuse")
    html = _refused(submit(signed_in(scene.carl), "/olga/proj/new/main", filename="a.txt", content="a\n"))
    assert "frozen" in html.lower()
    assert scene.refs() == []


def test_a_taken_down_workspace_refuses_its_proposal_edits(scene):
    from workspaces import moderation

    client = signed_in(scene.carl)
    assert submit(client, "/olga/proj/edit/main/README.md", content="mine\n", name="w").status_code == 302
    sam = UserFactory(username="sam", is_staff=True)
    moderation.do_take_down_workspace(repo=scene.repo, user=scene.carl, acting_user=sam, reason="DMCA")
    # Gone from everyone's reach, its owner's included: as a missing ref.
    for who in (scene.carl, scene.maud):
        assert signed_in(who).get("/olga/proj/edit/refs/users/carl/w/README.md").status_code == 404
    html = _refused(submit(client, "/olga/proj/edit/main/README.md", content="again\n", name="w2"))
    assert "taken down" in html.lower()


def test_the_conflict_page_shows_no_object_named_by_hand(scene):
    """Ids posted by hand (a hidden workspace's commit and blob) are not shown as "what you
    loaded": only what the viewer's own page could have shown is."""
    from workspaces import moderation

    secret = run_git(["hash-object", "-w", "--stdin"], repo=scene.repo.disk_path, input=b"top secret\n")
    blob = secret.text.strip()
    tree = run_git(
        ["mktree"], repo=scene.repo.disk_path, input=f"100644 blob {blob}\tREADME.md\n".encode()
    ).text.strip()
    hidden = run_git(["commit-tree", tree, "-m", "hidden"], repo=scene.repo.disk_path).text.strip()
    run_git(["update-ref", "refs/users/hugo/w", hidden], repo=scene.repo.disk_path)
    hugo = UserFactory(username="hugo")
    sam = UserFactory(username="sam", is_staff=True)
    moderation.do_hide_workspace(repo=scene.repo, user=hugo, acting_user=sam, reason="abuse")
    client = signed_in(scene.carl)
    fields, _ = read_form(page(client, "/olga/proj/edit/main/README.md"))
    response = client.post(
        "/olga/proj/edit/main/README.md",
        {**fields, "content": "x\n", "base_commit": hidden, "expected_blob": blob},
    )
    assert response.status_code == 409, response.status_code
    assert b"top secret" not in response.content
    assert scene.refs() == ["refs/users/hugo/w"]


def test_file_names_are_shown_as_text(scene):
    client = signed_in(scene.maud)
    name = "<img src=x onerror=alert(1)>.txt"
    response = submit(client, "/olga/proj/new/main", filename=name, content="x\n", target="branch")
    assert response.status_code == 302
    quoted = "%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E.txt"
    for url in (f"/olga/proj/edit/main/{quoted}", f"/olga/proj/delete/main/{quoted}"):
        html = page(client, url)
        assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;.txt" in html, url
    fields, _ = read_form(page(client, f"/olga/proj/edit/main/{quoted}"))
    assert fields["message"] == f"Update {name}"


def test_an_upload_over_a_file_changed_since_the_page_was_loaded_conflicts(scene):
    client = signed_in(scene.maud)
    fields, _ = read_form(page(client, "/olga/proj/upload/main/docs"))
    other = submit(
        signed_in(scene.olga), "/olga/proj/edit/main/docs/intro.md", content="theirs\n", target="branch"
    )
    assert other.status_code == 302
    moved = tip(scene.repo, "refs/heads/main")
    files = [_upload("intro.md", b"mine\n")]
    response = client.post("/olga/proj/upload/main/docs", {**fields, "files": files, "target": "branch"})
    assert response.status_code == 409 and 'id="conflict"' in response.content.decode()
    assert tip(scene.repo, "refs/heads/main") == moved
    # An id typed by hand is no commit the page could have been loaded at.
    hidden = run_git(
        ["commit-tree", "-m", "x", f"{scene.main}^{{tree}}"], repo=scene.repo.disk_path
    ).text.strip()
    response = client.post(
        "/olga/proj/upload/main/docs", {**fields, "base_commit": hidden, "files": [_upload("a.txt", b"a")]}
    )
    assert response.status_code == 409 and "load it again" in response.content.decode()
    assert scene.refs() == []


@pytest.mark.parametrize("kind", ["edit", "delete"])
def test_a_file_deleted_since_the_page_was_loaded_gets_the_conflict_page(scene, kind):
    client = signed_in(scene.maud)
    url = f"/olga/proj/{kind}/main/docs/intro.md"
    fields, _ = read_form(page(client, url))
    gone = submit(signed_in(scene.olga), "/olga/proj/delete/main/docs/intro.md", target="branch")
    assert gone.status_code == 302
    typed = "my version\n" if kind == "edit" else None
    data = {**fields, "target": "branch", **({"content": typed} if typed else {})}
    response = client.post(url, data)
    html = response.content.decode()
    assert response.status_code == 409 and 'id="conflict"' in html, (response.status_code, html[:3000])
    assert "The file is no longer there." in html
    assert typed is None or "my version" in html
