"""The Work view against the real server: a push through gunicorn invalidates the cached graph
(another process, the shared cache), and a real browser renders the SVG and follows its links."""

from __future__ import annotations

import pytest
from django.test import Client

from reviews.models import Proposal
from tests.browser import chromium_page, shot
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def busy(world):
    alice = world.add("alice")
    alice.commit("alice one", name="alice.txt")
    alice.commit("<script>window.pwned=1</script> two", name="alice.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    bob = world.add("bob")
    bob.commit("bob's nameless work", name="bob.txt")
    assert bob.push("HEAD:refs/for/main").returncode == 0
    world.owner.commit("main moves on")
    assert world.owner.push("main").returncode == 0
    return world


def test_a_push_invalidates_the_cached_graph(celery_worker_process, busy):
    """The live server's receiver enqueues the bump; the worker (another process, the shared
    cache) makes it."""
    client = Client()

    def served():
        return client.get("/owner/project/work.txt")

    # Cached once the worker has caught up with the fixture's pushes.
    wait_until(lambda: served()["X-Showwork-Cache"] == "hit", timeout=30, what="a cached Work page")
    first = served()
    assert "alice one" in first.content.decode() and "bob's nameless work" in first.content.decode()
    alice = busy.users["alice"]
    alice.commit("alice three", name="alice.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    after = wait_until(
        lambda: (response := served())["X-Showwork-Cache"] == "miss" and response,
        timeout=30,
        what="the Work page recomputed after the push",
    )
    assert after and "alice three" in after.content.decode()


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1100, height=700) as page:
        yield page


def test_browser_renders_the_graph_and_follows_links(busy, browser_page, live_server_url):
    page = browser_page
    bob_ref = next(r for r in busy.refs() if r.startswith("refs/users/bob/main-"))
    Proposal.objects.create(
        repository=busy.repo,
        number=1,
        author=busy.users["bob"].user,
        source_ref=bob_ref,
        target_branch="main",
        title="Bob's work",
    )
    page.goto(f"{live_server_url}/owner/project/work")
    svg = page.locator("svg.sw-graph")
    svg.wait_for()
    box = svg.bounding_box()
    assert box and box["width"] > 200 and box["height"] > 100
    rows = page.locator("svg.sw-graph a.sw-row")
    assert rows.count() >= 5  # 3 drafts, a base, main's tip
    assert page.evaluate("window.pwned") is None
    assert "<script>window.pwned=1</script> two" in (svg.text_content() or "")
    shot(page, "showwork-work.png")

    # Bob's head has an open proposal: its row opens the proposal.
    page.locator("svg.sw-graph a.sw-row", has_text="bob's nameless work").click()
    page.wait_for_url("**/owner/project/proposals/1")
    page.go_back()
    # Alice's rows open their commit pages, also from the keyboard.
    row = page.locator("svg.sw-graph a.sw-row", has_text="alice one")
    row.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/owner/project/commit/*")
    assert "alice one" in page.inner_text("main")
