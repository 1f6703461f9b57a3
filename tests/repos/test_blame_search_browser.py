"""Blame and in-repository search in a real browser: Playwright driving Debian's headless
Chromium against the real gunicorn server, on a history built with real git."""

from __future__ import annotations

import pytest

from tests.browser import chromium_page, shot
from tests.repos.histories import Work

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


@pytest.fixture
def history(live_server_url, tmp_path, git_home):
    """old.txt, then renamed to new.txt with line 2 changed, then two lines appended."""
    work = Work(tmp_path / "w", git_home)
    first = work.commit("first", {"old.txt": "one\ntwo\nthree\nfour\n", "x.py": "a = 1\n"})
    work.git("mv", "old.txt", "new.txt")
    work.commit("<b>second</b>", {"new.txt": "one\nTWO\nthree\nfour\n"})
    head = work.commit(
        "third", {"new.txt": "one\nTWO\nthree\nfour\nfive\nsix <script>window.pwned=1</script>\n"}
    )
    work.publish()
    return first, head


def test_blame_shows_groups_and_the_prior_link_navigates(history, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    first, _head = history
    page.goto(f"{base}/olga/proj/blob/main/new.txt")
    page.click("#blame-link")
    page.wait_for_url(f"{base}/olga/proj/blame/main/new.txt")
    groups = page.locator("tbody.blame-group")
    assert groups.count() == 4
    assert [groups.nth(i).locator("td.blame-num").count() for i in range(4)] == [1, 1, 2, 2]
    assert groups.nth(1).locator(".blame-subject").inner_text() == "<b>second</b>"
    assert "<script>" in groups.nth(3).locator("td.blame-code").nth(1).inner_text()
    shot(page, "blame.png")
    groups.nth(1).locator("a.blame-prior").click()
    page.wait_for_url(f"{base}/olga/proj/blame/{first}/old.txt")
    assert page.locator("tbody.blame-group").count() == 1
    assert page.locator("td.blame-code").all_inner_texts() == ["one", "two", "three", "four"]
    page.click("#blame-view-file")
    page.wait_for_url(f"{base}/olga/proj/blob/{first}/old.txt")
    assert page.dialogs == [] and page.evaluate("window.pwned") is None


def test_search_highlights_matches_and_opens_the_line(history, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    _first, head = history
    page.goto(f"{base}/olga/proj")
    page.fill(".repo-search-box input[name=q]", "two")
    page.press(".repo-search-box input[name=q]", "Enter")
    page.wait_for_url(f"{base}/olga/proj/search?q=two")
    assert page.locator(".search-file h3").all_inner_texts() == ["new.txt"]
    assert page.locator(".search-lines mark").all_inner_texts() == ["TWO"]
    shot(page, "search.png")
    # Regex and case from the form.
    page.fill("#search-form input[name=q]", "^(f|s)[a-z]+( |$)")
    page.check("#search-form input[name=regex]")
    page.click("#search-form button[type=submit]")
    page.wait_for_load_state()
    assert page.locator(".search-lines mark").all_inner_texts() == ["four", "five", "six "]
    page.locator(".search-lines td.num a").nth(1).click()
    page.wait_for_url(f"{base}/olga/proj/blob/{head}/new.txt#L5")
    assert "five" in page.inner_text("main")
    assert page.dialogs == [] and page.evaluate("window.pwned") is None
