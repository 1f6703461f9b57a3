"""Proposing, reviewing and merging in a real browser: Playwright driving Debian's headless
Chromium against the real gunicorn server, the work pushed with real git."""

from __future__ import annotations

import subprocess

import pytest

from reviews.models import Proposal, ProposalState
from tests.browser import chromium_page, shot

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"
XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("header button.linkbutton").count() == 1, page.inner_text("main")


def sign_out(page) -> None:
    page.click("header button.linkbutton")
    page.wait_for_load_state()


def test_propose_review_and_merge(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    maint = world.add("maint", "maintainer")
    for pusher in (alice, maint):
        pusher.user.set_password(PASSWORD)
        pusher.user.save()
    head = alice.commit("Teach the parser about tabs", name="parser.txt")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    ref = f"refs/users/alice/main-{head[:12]}"
    world.owner.commit("unrelated work on main", name="other.txt")
    assert world.owner.push("main").returncode == 0

    # Alice proposes her nameless head from the form.
    sign_in(page, base, "alice")
    page.goto(f"{base}/owner/project/proposals")
    page.click("text=New proposal")
    page.select_option("select[name=source_ref]", ref)
    page.select_option("select[name=target_branch]", "main")
    page.fill("input[name=title]", f"Tabs {XSS}")
    page.fill("textarea[name=description]", f"Parser change.\n{XSS}")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{base}/owner/project/proposals/1")
    assert page.inner_text("h2.proposal-title").startswith(f"Tabs {XSS}")
    assert "Teach the parser about tabs" in page.inner_text("main")
    assert page.locator("table.diff").count() == 1  # the diff against the merge base
    assert page.locator("#merge-form").count() == 0  # authors do not merge
    page.fill("#comment-body", f"Ready for review {XSS}")
    page.click("form[action$='/comment'] button")
    page.wait_for_load_state()
    page.fill("#comment-body", "Looks **good**")
    page.click("form[action$='/comment'] button")
    page.wait_for_load_state()
    assert "Ready for review" in page.inner_text(".comments")
    assert page.inner_text(".comments .markdown strong") == "good"  # Markdown, sanitized
    sign_out(page)

    # The maintainer reviews, approves and squashes it in.
    sign_in(page, base, "maint")
    page.goto(f"{base}/owner/project/proposals/1")
    page.click("text=Approve revision 1")
    page.wait_for_load_state()
    assert "maint approved revision 1" in page.inner_text(".approvals")
    page.select_option("#merge-strategy", "squash")
    shot(page, "proposal-before-merge.png")
    page.click("#merge-form button[type=submit]")
    page.wait_for_load_state()
    page.click("#confirm-merge")  # the confirmation names the strategy; its POST redirects
    page.wait_for_url(f"{base}/owner/project/proposals/1")
    assert "Merged into main" in page.inner_text(".messages")
    assert page.inner_text("#proposal-state") == "merged"
    shot(page, "proposal-merged.png")

    assert page.dialogs == [] and page.evaluate("window.pwned") is None
    proposal = Proposal.objects.get(repository=world.repo)
    assert proposal.state == ProposalState.MERGED and proposal.merged_by == maint.user
    tip = world.refs()["refs/heads/main"]
    assert tip == proposal.merged_sha
    message = subprocess.run(
        ["git", "--git-dir", str(world.repo.disk_path), "log", "-1", "--format=%an|%s", tip],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The squash's author is the identity alice's commits carry (git_home's), not her account.
    assert message == f"Test Author|Tabs {XSS}"
