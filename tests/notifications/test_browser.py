"""Following a proposal, hearing of a comment, and choosing delivery, in a real browser:
Playwright driving Debian's headless Chromium against the real gunicorn server."""

from __future__ import annotations

import pytest

from notifications.models import Preference, Subscription
from reviews import services
from tests.browser import chromium_page, shot

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def test_follow_hear_of_a_comment_and_choose_delivery(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    bob = world.add("bob", "reader")
    bob.user.set_password(PASSWORD)
    bob.user.save()
    alice.commit("Teach the parser about tabs", name="parser.txt")
    assert alice.push("HEAD:refs/users/alice/tabs").returncode == 0
    proposal = services.proposal_open(
        repo=world.repo,
        user=alice.user,
        source_ref="refs/users/alice/tabs",
        target_branch="main",
        title="Tabs",
    )

    page.goto(f"{base}/login")
    page.fill("input[name=username]", "bob")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    page.goto(f"{base}/owner/project/proposals/1")
    page.click("#subscription button:has-text('Follow')")
    page.wait_for_url(f"{base}/owner/project/proposals/1")
    assert page.inner_text("#subscription button") == "Unfollow"
    assert Subscription.objects.get(user=bob.user, subject=f"proposal:{proposal.pk}").subscribed

    # alice comments; bob, a follower, is told (recorded once the comment's transaction commits).
    services.comment_add(proposal=proposal, user=alice.user, body=f"Now with spaces too {XSS}")
    page.goto(f"{base}/notifications")
    assert page.locator("header .badge").inner_text() == "1"
    assert "alice commented in #1 on owner/project: Tabs" in page.inner_text(".notifications")
    page.click(".notifications button:has-text('Open')")
    page.wait_for_load_state()
    assert page.url.startswith(f"{base}/owner/project/proposals/1")
    assert page.dialogs == []

    # Comments on the site only, from now on.
    page.goto(f"{base}/settings/notifications")
    page.check("input[name=comment][value=web]")
    page.click("#notification-settings button[type=submit]")
    page.wait_for_load_state()
    assert "Notification settings saved." in page.inner_text("main")
    assert page.is_checked("input[name=comment][value=web]")
    shot(page, "notification-settings.png")
    assert Preference.objects.get(user=bob.user, kind="comment").delivery == "web"
