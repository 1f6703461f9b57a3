"""The web editor in a real browser: Playwright driving Debian's headless Chromium against the
real gunicorn server. A contributor edits, adds, uploads and deletes a file from the browser
alone, each ending in "Open proposal" and a proposal; two tabs editing the same file end in
the conflict page, with nothing typed lost."""

from __future__ import annotations

import subprocess

import pytest

from reviews.models import Proposal
from tests.browser import chromium_page, expect, shot

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"
XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def sign_in(page, base: str, user) -> None:
    user.set_password(PASSWORD)
    user.save()
    page.goto(f"{base}/login")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("header button.linkbutton").count() == 1, page.inner_text("main")


def commit_and_propose(page, base: str, subject: str) -> Proposal:
    """Commit the editor's form to the workspace, then "Open proposal" and open it."""
    page.fill("textarea[name=message]", subject)
    page.click("#webedit-form button[type=submit]")
    page.wait_for_url(f"{base}/owner/project/edited")
    assert "Committed to your workspace" in page.inner_text("main")
    shot(page, "webedit-done.png")
    page.click("#open-proposal")
    page.wait_for_load_state()
    # The new-proposal form is filled in from the commit: nothing to type.
    assert page.locator("input[name=title]").input_value() == subject
    ref = page.locator("select[name=source_ref]").input_value()
    page.click("main form button[type=submit]")
    page.wait_for_load_state()
    proposal = Proposal.objects.get(repository__name="project", source_ref=ref)
    assert page.url == f"{base}/owner/project/proposals/{proposal.number}"
    assert proposal.title == subject and proposal.target_branch == "main"
    return proposal


def show(world, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(world.repo.disk_path), "show", f"{rev}:{path}"],
        capture_output=True,
        text=True,
    ).stdout


def test_edit_add_upload_and_delete_each_end_in_a_proposal(world, browser_page, live_server_url, tmp_path):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    sign_in(page, base, alice.user)

    # Edit: the blob page's Edit button, the textarea with the file, a commit message.
    page.goto(f"{base}/owner/project/blob/main/file.txt")
    shot(page, "webedit-blob.png")
    page.click("#edit-file")
    assert page.locator("textarea[name=content]").input_value() == "base\n"
    # The deferred script runs after the click returns: wait for its status line.
    expect(page.locator("[data-editor-status]")).to_have_text("1 line, 5 characters")
    page.fill("textarea[name=content]", f"base\nedited {XSS}\n")
    shot(page, "webedit-editor.png")
    edited = commit_and_propose(page, base, f"Edit the file {XSS}")
    assert show(world, edited.source_ref, "file.txt") == f"base\nedited {XSS}\n"

    # Add: the tree page's Add file button.
    page.goto(f"{base}/owner/project/tree/main")
    page.click("#add-file")
    page.fill("input[name=filename]", "docs/new.md")
    page.fill("textarea[name=content]", "# New\n")
    added = commit_and_propose(page, base, "Add a page")
    assert show(world, added.source_ref, "docs/new.md") == "# New\n"

    # Upload: several files at once, into the directory.
    upload = [tmp_path / "one.txt", tmp_path / "two.bin"]
    upload[0].write_text("one\n")
    upload[1].write_bytes(b"\x00\x01two")
    page.goto(f"{base}/owner/project/tree/main")
    page.click("#upload-files")
    shot(page, "webedit-upload.png")
    page.set_input_files("input[name=files]", [str(p) for p in upload])
    uploaded = commit_and_propose(page, base, "Upload two files")
    assert show(world, uploaded.source_ref, "one.txt") == "one\n"

    # Delete: the blob page's Delete button and its confirmation.
    page.goto(f"{base}/owner/project/blob/main/file.txt")
    page.click("#delete-file")
    deleted = commit_and_propose(page, base, "Remove the file")
    assert show(world, deleted.source_ref, "file.txt") == ""

    assert len({edited.source_ref, added.source_ref, uploaded.source_ref, deleted.source_ref}) == 4
    assert world.refs()["refs/heads/main"] == world.base_sha  # the branch never moved
    page.goto(f"{base}/owner/project/proposals/{edited.number}")
    assert page.dialogs == [] and page.evaluate("window.pwned") is None


def test_two_tabs_editing_one_file_end_in_the_conflict_page(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    sign_in(page, base, world.owner.user)
    url = f"{base}/owner/project/edit/main/file.txt"
    page.goto(url)
    other = page.context.new_page()
    other.goto(url)
    other.fill("textarea[name=content]", "theirs\n")
    other.check("input[name=target][value=branch]")
    other.click("#webedit-form button[type=submit]")
    other.wait_for_url(f"{base}/owner/project/blob/main/file.txt")
    moved = world.refs()["refs/heads/main"]

    page.fill("textarea[name=content]", f"mine {XSS}\n")
    page.check("input[name=target][value=branch]")
    page.click("#webedit-form button[type=submit]")
    page.wait_for_load_state()
    assert "changed since you opened it" in page.inner_text("#conflict")
    assert "+theirs" in page.inner_text("#conflict-diff")
    assert page.locator("#your-text").input_value().replace("\r\n", "\n") == f"mine {XSS}\n"
    shot(page, "webedit-conflict.png")
    assert world.refs()["refs/heads/main"] == moved
    page.click("#reload")
    page.wait_for_load_state()
    assert page.locator("textarea[name=content]").input_value() == "theirs\n"
    # On a phone the editor fits: it scrolls inside its text box, never the page sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    inner, scroll = page.evaluate("[innerWidth, document.documentElement.scrollWidth]")
    shot(page, "webedit-editor-phone.png")
    assert scroll <= inner, (scroll, inner)
    assert page.dialogs == [] and page.evaluate("window.pwned") is None
