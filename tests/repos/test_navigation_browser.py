"""The branch and tag switcher, the compare picker and the repository page's sidebar in a real
browser: Playwright driving Debian's headless Chromium against the real gunicorn server."""

from __future__ import annotations

import pytest

from gitcore.git import run_git
from tests.browser import chromium_page, shot
from tests.repos.histories import Work

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

TAGS = [f"v1.{i}" for i in range(11)] + [f"v0.{i}" for i in range(1, 59)]  # 69 tags


@pytest.fixture
def repo(tmp_path, git_home, live_server_url):
    """olga/nav: main and an older branch `feature`; 69 version tags, v1.10 on a commit whose
    docs/guide.md differs from main's."""
    work = Work(tmp_path / "w", git_home)
    first = work.commit("first", {"README.md": "# nav\n", "docs/guide.md": "Guide on main\n"})
    work.git("checkout", "-q", "-b", "feature")
    work.commit("feature", {"feature.txt": "f\n"})
    work.git("checkout", "-q", "--detach", "main")
    work.commit("release", {"docs/guide.md": "Guide at v1.10\n"})
    work.git("tag", "v1.10")
    work.git("checkout", "-q", "main")
    work.commit("later on main", {"later.txt": "l\n"})
    repo = work.publish(owner="olga", name="nav")
    lines = [f"create refs/tags/{tag} {first}\n" for tag in TAGS if tag != "v1.10"]
    run_git(["update-ref", "--stdin"], repo=repo.disk_path, input="".join(lines).encode())
    return repo


def _page(monkeypatch, width: int, height: int):
    return chromium_page(monkeypatch, width=width, height=height)


def test_switcher_filters_and_opens_the_same_file_at_a_tag(repo, monkeypatch, live_server_url):
    expect = pytest.importorskip("playwright.sync_api").expect
    base = live_server_url
    with _page(monkeypatch, 1280, 900) as page:
        page.goto(f"{base}/olga/nav/blob/main/docs/guide.md")
        assert "Guide on main" in page.inner_text("main")
        summary = page.locator(".location .ref-switch > summary")
        assert summary.inner_text().strip().startswith("main")
        summary.click()
        tag_links = page.locator('.ref-switch-list[data-kind="tag"] a')
        tag_links.first.wait_for()
        assert tag_links.first.inner_text() == "v1.10"  # newest version first
        page.locator("#ref-switch-q").fill("V1.1")
        expect(tag_links).to_have_count(2)  # waits for the filtered list
        assert tag_links.all_inner_texts() == ["v1.10", "v1.1"]
        # Each list is fetched on its own and filled when its answer comes: wait for this one too.
        expect(page.locator('.ref-switch-list[data-kind="branch"]')).to_have_text("Nothing matches.")
        shot(page, "ref-switcher.png")
        # From the keyboard: down into the list, Enter on the first tag.
        page.keyboard.press("ArrowDown")
        assert page.locator(":focus").inner_text() == "v1.10"
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url == f"{base}/olga/nav/blob/v1.10/docs/guide.md"
        assert "Guide at v1.10" in page.inner_text("main")
        # Escape closes the panel and gives the focus back to the button.
        page.locator(".location .ref-switch > summary").click()
        page.locator("#ref-switch-q").wait_for()
        page.keyboard.press("Escape")
        expect(page.locator(".location .ref-switch[open]")).to_have_count(0)
        expect(page.locator(".location .ref-switch > summary")).to_be_focused()
        # On a directory, a branch opens the same directory there.
        page.goto(f"{base}/olga/nav/tree/v1.10/docs")
        page.locator(".location .ref-switch > summary").click()
        page.locator('.ref-switch-list[data-kind="branch"] a', has_text="feature").click()
        page.wait_for_url(f"{base}/olga/nav/tree/feature/docs")
        assert page.dialogs == []


def test_compare_picker_submits_to_the_compare_page_and_swaps(repo, monkeypatch, live_server_url):
    base = live_server_url
    with _page(monkeypatch, 1280, 900) as page:
        page.goto(f"{base}/olga/nav/compare")
        assert page.input_value("#compare-base") == "main"
        assert page.input_value("#compare-head") == "feature"
        page.fill("#compare-head", "v1.10")
        with page.expect_navigation():
            page.click("#compare-picker button[type=submit]")
        assert page.url == f"{base}/olga/nav/compare/main...v1.10"
        assert page.input_value("#compare-head") == "v1.10"
        shot(page, "compare-picker.png")
        with page.expect_navigation():
            page.click("#compare-swap")
        assert page.url == f"{base}/olga/nav/compare/v1.10...main"
        assert "later on main" in page.inner_text("main")


def test_repository_page_lists_ten_tags_by_version_on_a_phone(repo, monkeypatch, live_server_url):
    with _page(monkeypatch, 390, 844) as page:
        page.goto(f"{live_server_url}/olga/nav")
        tags = page.locator("#sidebar-tags a")
        names = tags.all_inner_texts()
        assert names == [f"v1.{i}" for i in range(10, 0, -1)]
        assert names.index("v1.10") < names.index("v1.9") < names.index("v1.2")
        more = page.locator(".refs-more a", has_text="more").last
        assert more.inner_text() == "59 more"
        box = page.locator("#sidebar-tags").bounding_box()
        assert box is not None and box["height"] < 844 / 2, box
        shot(page, "repository-sidebar-phone.png")
        with page.expect_navigation():
            more.click()
        assert page.url == f"{live_server_url}/olga/nav/tags"
        assert "(69)" in page.inner_text("h2")
        with page.expect_navigation():
            page.locator("#ref-list a", has_text="v1.10").first.click()
        assert page.url == f"{live_server_url}/olga/nav/tree/v1.10"
