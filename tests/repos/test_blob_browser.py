"""The file view in a real browser (Playwright driving Debian's headless Chromium against
gunicorn): line numbers level with their code however it wraps, line and range selections
from the address, by click, Shift-click and keyboard, and the permalink at the commit id."""

from __future__ import annotations

import pytest

from tests.browser import SHOTS, chromium_page, expect, shot
from tests.repos.histories import Work

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

LINES = 260


def source() -> str:
    """Long lines that wrap, tabs, empty lines; text on lines 1, 200 and the last."""
    out = []
    for n in range(1, LINES + 1):
        if n % 5 == 0 and n not in (200, LINES):
            out.append("")
        elif n % 7 == 0:
            out.append(f"value_{n} = compute(" + ", ".join(f"argument_{k}" for k in range(40)) + ")")
        elif n % 3 == 0:
            out.append(f"\tif x_{n}:\n\t\ty = '\t<{n}>'".split("\n")[n % 2])
        else:
            out.append(f"line_{n} = {n}  # a comment")
    return "\n".join(out) + "\n"


@pytest.fixture
def published(tmp_path, git_home, live_server_url):
    work = Work(tmp_path / "work", git_home)
    sha = work.commit("code", {"src/wide.py": source()})
    work.publish()
    return live_server_url, sha


@pytest.fixture
def browser(monkeypatch):
    with chromium_page(monkeypatch, width=900, height=700) as page:
        # Script errors and refused scripts (CSP); failed loads are judged by URL.
        errors: list[str] = []
        page.on(
            "console",
            lambda msg: (
                errors.append(msg.text)
                if msg.type == "error" and not msg.text.startswith("Failed to load resource")
                else None
            ),
        )
        page.on(
            "response",
            lambda r: (
                errors.append(f"{r.status} {r.url}")
                if r.status >= 400 and not r.url.endswith("/favicon.ico")
                else None
            ),
        )
        page.errors = errors
        yield page


TOPS = """n => {
  // The first line box of each cell's text: what a reader sees side by side.
  const top = (node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    return range.getClientRects()[0].top;
  };
  const row = document.getElementById(`L${n}`);
  const number = row.querySelector("td.num a");
  const cell = row.querySelector("td.code");
  return {number: top(number), code: top(cell), cell: cell.getBoundingClientRect().height,
          lineHeight: number.getBoundingClientRect().height};
}"""


def selected(page) -> list[str]:
    return page.eval_on_selector_all("#blob-lines tr.selected", "rows => rows.map(r => r.id)")


def test_numbers_share_a_top_with_their_code_at_lines_1_200_and_the_last(browser, published):
    base, _sha = published
    browser.goto(f"{base}/olga/proj/blob/main/src/wide.py")
    wrapped = browser.evaluate(TOPS, 7)
    assert wrapped["cell"] > 2.5 * wrapped["lineHeight"]  # a long line does wrap here
    for n in (1, 200, LINES):
        tops = browser.evaluate(TOPS, n)
        assert abs(tops["number"] - tops["code"]) < 1, (n, tops)
    assert browser.evaluate(TOPS, 200)["number"] > browser.evaluate(TOPS, 1)["number"] + 200 * 15
    shot(browser, "blob-lines.png")
    assert browser.errors == []


def test_a_range_in_the_address_is_marked_and_scrolled_to(browser, published):
    base, _sha = published
    browser.goto(f"{base}/olga/proj/blob/main/src/wide.py#L100-L110")
    assert selected(browser) == [f"L{n}" for n in range(100, 111)]
    box = browser.locator("#L100").bounding_box()
    assert 0 <= box["y"] <= 700
    browser.evaluate("window.location.hash = '#L3'")
    expect(browser.locator("tr.selected")).to_have_count(1)
    assert selected(browser) == ["L3"]
    assert browser.errors == []


def test_click_shift_click_and_keyboard_select_and_the_permalink_follows(browser, published):
    base, sha = published
    browser.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
    browser.goto(f"{base}/olga/proj/blob/main/src/wide.py")
    browser.click("#L30 td.num a")
    browser.click("#L35 td.num a", modifiers=["Shift"])
    assert browser.evaluate("window.location.hash") == "#L30-L35"
    assert selected(browser) == [f"L{n}" for n in range(30, 36)]
    permalink = f"/olga/proj/blob/{sha}/src/wide.py#L30-L35"
    assert browser.get_attribute("#permalink", "href") == permalink
    browser.click("#copy-permalink")
    expect(browser.locator("#permalink-status")).not_to_have_text("")
    assert browser.evaluate("navigator.clipboard.readText()") == base + permalink
    # Keyboard: the numbers are links; Enter selects, Shift+Enter extends.
    browser.focus("#L40 td.num a")
    browser.keyboard.press("Enter")
    browser.focus("#L38 td.num a")
    browser.keyboard.press("Shift+Enter")
    assert browser.evaluate("window.location.hash") == "#L38-L40"
    assert selected(browser) == ["L38", "L39", "L40"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(path=str(SHOTS / "blob-range.png"))  # the viewport, with the range
    assert len(browser.context.pages) == 1  # Shift+Enter opened no window
    assert browser.errors == []


def test_without_javascript_a_line_anchor_still_marks_its_line(browser, published):
    base, _sha = published
    context = browser.context.browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{base}/olga/proj/blob/main/src/wide.py#L12")
        color = page.eval_on_selector("#L12 td.code", "td => getComputedStyle(td).backgroundColor")
        other = page.eval_on_selector("#L13 td.code", "td => getComputedStyle(td).backgroundColor")
        assert color != other and page.get_attribute("#L12 td.num a", "href") == "#L12"
    finally:
        context.close()
