"""The web editor's pages with Django's client (CSRF enforced), on repositories imported from
a real history: the buttons on the browsing pages, who gets which choice, each page and its
POST, and a proposal's files edited in place. The commits are real (workspaces.webedit.service
on real git); refusals, conflicts and hostile input are in test_webedit_refusals.py, the same
pages in a browser in test_webedit_browser.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from gitcore.git import run_git
from repos.models import Visibility
from tests.factories import UserFactory
from tests.workspaces.webedit_pages_support import (
    XSS,
    Scene,
    build_history,
    page,
    read_form,
    show,
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


# --- the buttons on the browsing pages --------------------------------------------------------


def test_blob_and_tree_pages_offer_the_editor_on_branches_only(scene):
    client = signed_in(scene.carl)
    blob = page(client, "/olga/proj/blob/main/README.md")
    assert (
        'href="/olga/proj/edit/main/README.md"' in blob and 'href="/olga/proj/delete/main/README.md"' in blob
    )
    home = page(client, "/olga/proj")
    assert 'href="/olga/proj/new/main"' in home and 'href="/olga/proj/upload/main"' in home
    tree = page(client, "/olga/proj/tree/main/docs")
    assert 'href="/olga/proj/new/main/docs"' in tree and 'href="/olga/proj/upload/main/docs"' in tree
    # A tag and a commit id have nothing to commit onto.
    for url in (
        "/olga/proj/blob/v1/README.md",
        f"/olga/proj/blob/{scene.main}/README.md",
        "/olga/proj/tree/v1",
    ):
        assert "/edit/" not in page(client, url) and "/upload/" not in page(client, url), url
    # Anonymous visitors see the buttons too: signing in is the next step.
    assert 'href="/olga/proj/edit/main/README.md"' in page(Client(), "/olga/proj/blob/main/README.md")


@pytest.mark.parametrize("path", ["logo.png", "big.txt", "link"])
def test_edit_is_disabled_with_the_reason(scene, settings, path):
    settings.WEB_EDIT_MAX_BYTES = 1024
    blob = page(signed_in(scene.carl), f"/olga/proj/blob/main/{path}")
    button = re.search(r"<button[^>]*disabled[^>]*>Edit</button> <span[^>]*>([^<]+)</span>", blob)
    assert button and button.group(1).strip(), blob
    assert f'href="/olga/proj/edit/main/{path}"' not in blob
    client = signed_in(scene.carl)
    editor = page(client, f"/olga/proj/edit/main/{path}")
    assert 'id="not-editable"' in editor and "<textarea" not in editor
    # A form posted anyway (built by hand) commits nothing.
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page(client, "/olga/proj/new/main"))
    assert token
    response = client.post(
        f"/olga/proj/edit/main/{path}",
        {"csrfmiddlewaretoken": token.group(1), "content": "x", "message": "m", "target": "workspace"},
    )
    assert response.status_code == 400 and scene.refs() == []


# --- who gets what -------------------------------------------------------------------------------


def test_anonymous_visitors_sign_in_and_private_repositories_stay_404(history):
    scene = Scene(history, private=True)
    for url in ("/olga/proj/edit/main/README.md", "/olga/proj/new/main", "/olga/proj/edited"):
        assert Client().get(url).status_code == 404
        assert signed_in(UserFactory(username="otto")).get(url).status_code == 404
    scene.repo.visibility = Visibility.PUBLIC
    scene.repo.save()
    response = Client().get("/olga/proj/edit/main/README.md")
    assert response.status_code == 302 and response["Location"].startswith("/login?next=/olga/proj/edit/")


@pytest.mark.parametrize(
    "url",
    [
        "/olga/proj/edit/main/nope.txt",
        "/olga/proj/edit/main/docs",  # a directory
        "/olga/proj/edit/nobranch/README.md",
        "/olga/proj/edit/v1/README.md",  # a tag
        "/olga/proj/edit/main/../README.md",
        "/olga/proj/new/main/README.md",  # a file, not a directory
        "/olga/proj/delete/main/docs",
        "/olga/proj/edit/refs/users/nobody/x/README.md",
        "/olga/proj/edit/refs/heads/main/README.md",
    ],
)
def test_unknown_refs_and_paths_are_404(scene, url):
    assert signed_in(scene.carl).get(url).status_code == 404


def test_contributors_commit_to_their_workspace_maintainers_may_choose_the_branch(scene):
    html = page(signed_in(scene.carl), "/olga/proj/edit/main/README.md")
    fields, choices = read_form(html)
    assert choices["target"] == ["workspace"] and fields["target"] == "workspace"
    assert fields["content"] == "# Project\n\nHello.\n"
    assert fields["message"] == "Update README.md"
    assert fields["name"] == "edit-readme"
    assert fields["base_commit"] == scene.main
    readme = run_git(["rev-parse", f"{scene.main}:README.md"], repo=scene.repo.disk_path).text.strip()
    assert fields["expected_blob"] == readme
    _fields, choices = read_form(page(signed_in(scene.maud), "/olga/proj/edit/main/README.md"))
    assert choices["target"] == ["branch", "workspace"]


# --- committing --------------------------------------------------------------------------------


def test_edit_commits_to_the_workspace_then_offers_the_proposal(scene):
    client = signed_in(scene.carl)
    response = submit(
        client,
        "/olga/proj/edit/main/crlf.txt",
        content="one\r\ntwo\r\nthree\r\n",
        message=f"Add a third line {XSS}",
        name="more-lines",
    )
    assert response.status_code == 302 and response["Location"] == "/olga/proj/edited"
    ref = "refs/users/carl/more-lines"
    commit = tip(scene.repo, ref)
    assert scene.file(commit, "crlf.txt") == b"one\r\ntwo\r\nthree\r\n"  # CRLF kept
    assert tip(scene.repo, "refs/heads/main") == scene.main
    done = page(client, "/olga/proj/edited")
    assert commit[:12] in done and "refs/users/carl/more-lines" in done
    assert 'href="/olga/proj/workspaces/carl/more-lines"' in done
    link = re.search(r'<a class="button" id="open-proposal" href="([^"]+)">Open proposal</a>', done)
    assert link and link.group(1).startswith("/olga/proj/proposals/new?"), done
    assert "ref=refs%2Fusers%2Fcarl%2Fmore-lines" in link.group(1) and "target=main" in link.group(1)
    assert XSS not in done and "&lt;img src=x onerror=alert(1)&gt;" in done
    assert "Add a third line" in show(scene.repo, commit, scene.env)


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(scene):
    client = signed_in(scene.carl)
    fields, _ = read_form(page(client, "/olga/proj/edit/main/README.md"))
    fields.pop("csrfmiddlewaretoken")
    response = client.post("/olga/proj/edit/main/README.md", {**fields, "content": "changed\n"})
    assert response.status_code == 403 and scene.refs() == []
    response = client.post("/olga/proj/upload/main", {**fields, "files": []})
    assert response.status_code == 403 and scene.refs() == []


def test_a_maintainer_commits_to_the_branch(scene):
    client = signed_in(scene.maud)
    response = submit(client, "/olga/proj/edit/main/README.md", content="# Project\n", target="branch")
    assert response.status_code == 302 and response["Location"] == "/olga/proj/blob/main/README.md"
    new = tip(scene.repo, "refs/heads/main")
    assert new != scene.main and scene.file(new, "README.md") == b"# Project\n"
    assert scene.refs() == []
    assert "Committed" in page(client, response["Location"])


def test_a_contributor_cannot_pick_the_branch(scene):
    response = submit(signed_in(scene.carl), "/olga/proj/edit/main/README.md", content="x\n", target="branch")
    assert response.status_code == 400 and tip(scene.repo, "refs/heads/main") == scene.main
    assert scene.refs() == []


def test_add_a_file_in_a_directory(scene):
    client = signed_in(scene.carl)
    response = submit(
        client,
        "/olga/proj/new/main/docs",
        filename="guide/start.md",
        content="Start\n",
        message="Add a guide",
    )
    assert response.status_code == 302
    (ref,) = scene.refs()
    assert scene.file(tip(scene.repo, ref), "docs/guide/start.md") == b"Start\n"
    assert scene.file(tip(scene.repo, ref), "docs/intro.md") == b"intro\n"


def test_delete_a_file(scene):
    client = signed_in(scene.carl)
    response = submit(client, "/olga/proj/delete/main/docs/intro.md", name="drop-intro")
    assert response.status_code == 302
    commit = tip(scene.repo, "refs/users/carl/drop-intro")
    listed = run_git(["ls-tree", "-r", "--name-only", commit], repo=scene.repo.disk_path).text.split()
    assert "docs/intro.md" not in listed and "README.md" in listed


# --- uploads -------------------------------------------------------------------------------------


def _upload(name: str, data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def test_upload_files_with_hostile_names_lands_them_in_the_directory(scene):
    client = signed_in(scene.carl)
    files = [_upload("C:\\Users\\x\\..\\notes.txt", b"notes\n"), _upload("../../logo.png", b"\x00new")]
    response = submit(client, "/olga/proj/upload/main/docs", files=files, name="uploads")
    assert response.status_code == 302, response.content.decode()[:2000]
    commit = tip(scene.repo, "refs/users/carl/uploads")
    assert scene.file(commit, "docs/notes.txt") == b"notes\n"
    assert scene.file(commit, "docs/logo.png") == b"\x00new"
    assert scene.file(commit, "logo.png") == scene.file(scene.main, "logo.png")  # untouched


def test_upload_replaces_a_binary_file(scene):
    response = submit(
        signed_in(scene.carl), "/olga/proj/upload/main", files=[_upload("logo.png", b"\x00v2")], name="logo"
    )
    assert response.status_code == 302
    assert scene.file(tip(scene.repo, "refs/users/carl/logo"), "logo.png") == b"\x00v2"


# --- a proposal's files, edited in place ---------------------------------------------------------


def test_a_proposal_s_files_are_edited_in_place(scene, monkeypatch, django_capture_on_commit_callbacks):
    from reviews.models import Proposal
    from reviews.services import proposal_open
    from tests.eager import run_followers

    run_followers(monkeypatch)
    client = signed_in(scene.carl)
    assert (
        submit(client, "/olga/proj/edit/main/README.md", content="# Carl's\n", name="fix").status_code == 302
    )
    ref = "refs/users/carl/fix"
    first = tip(scene.repo, ref)
    with django_capture_on_commit_callbacks(execute=True):
        proposal = proposal_open(
            repo=scene.repo, user=scene.carl, source_ref=ref, target_branch="main", title="Fix"
        )
    url = f"/olga/proj/proposals/{proposal.number}"
    editor = f"/olga/proj/edit/{ref}/README.md?proposal={proposal.number}"
    link = f'href="{editor}"'
    assert link in page(client, url) and link in page(signed_in(scene.maud), url)
    assert link not in page(signed_in(UserFactory(username="otto")), url)
    assert link not in page(Client(), url)

    # The maintainer follows the link: the commit lands on carl's ref, after his.
    maud = signed_in(scene.maud)
    html = page(maud, editor)
    assert 'href="/olga/proj/workspaces/carl/fix"' in html  # Cancel: back to the ref's page
    fields, choices = read_form(html)
    assert choices["target"] == ["ref", "workspace"] and fields["target"] == "ref"
    with django_capture_on_commit_callbacks(execute=True):
        response = maud.post(editor, {**fields, "content": "# Carl's, reviewed\n", "message": "Review"})
    assert response.status_code == 302
    done = page(maud, response["Location"])
    assert f'href="/olga/proj/proposals/{proposal.number}"' in done and "open-proposal" not in done
    assert f"<code>{ref}</code>" in done  # not "your workspace": carl's
    second = tip(scene.repo, ref)
    assert scene.file(second, "README.md") == b"# Carl's, reviewed\n"
    parents = run_git(["rev-list", "--parents", "-1", second], repo=scene.repo.disk_path).text.split()
    assert parents == [second, first]
    proposal = Proposal.objects.get(pk=proposal.pk)
    assert [r.head_sha for r in proposal.revisions.order_by("number")] == [first, second]
