"""The dashboard in a real browser (Playwright driving Debian's headless Chromium against the
live server): from the header link to a stale ref's one-click cleanup, and back again from
the workspace page's Restore button."""

from __future__ import annotations

import pytest

from tests.browser import chromium_page, shot
from workspaces.models import ArchivedRef, Workspace

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "lantern-quartz-58-meadow"


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def test_clean_up_a_stale_copy_of_main_and_restore_it(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    alice.user.set_password(PASSWORD)
    alice.user.save()
    assert alice.push("HEAD:refs/users/alice/main").returncode == 0  # a copy of main
    alice.commit("Real work", name="work.txt")
    assert alice.push("HEAD:refs/users/alice/work").returncode == 0
    Workspace.objects.get_or_create(repository=world.repo, user=alice.user)
    main = world.refs()["refs/heads/main"]

    page.goto(f"{base}/login")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()
    page.click("header a[href='/dashboard']")
    page.wait_for_url(f"{base}/dashboard")
    stale = page.locator("#stale tr.stale-ref")
    assert stale.count() == 1 and "already on main" in stale.inner_text()
    assert "Real work" in page.inner_text("#unproposed")
    shot(page, "dashboard-stale.png")

    stale.locator("button", has_text="Clean up").click()
    page.wait_for_url(f"{base}/dashboard")
    assert "Cleaned up 1 stale ref" in page.inner_text(".messages")
    assert "No stale refs." in page.inner_text("#stale")
    assert "refs/users/alice/main" not in world.refs()
    assert "refs/users/alice/work" in world.refs()
    archived = ArchivedRef.objects.get()
    assert (archived.how, archived.sha) == ("stale", main)

    # Recorded and restorable: the workspace page brings it back.
    page.goto(f"{base}/owner/project/workspaces/alice")
    page.click("form[action$='/restore'] button")
    page.wait_for_load_state()
    assert "Restored refs/users/alice/main" in page.inner_text(".messages")
    assert world.refs()["refs/users/alice/main"] == main
    # Back on the dashboard, at a phone's width: the tables scroll, the page does not.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{base}/dashboard")
    assert page.locator("#stale tr.stale-ref").count() == 1
    inner, scroll = page.evaluate("[innerWidth, document.documentElement.scrollWidth]")
    assert scroll <= inner, (scroll, inner)
    shot(page, "dashboard-phone.png")
    assert page.dialogs == []
