"""Playwright driving Debian's Chromium, headless, for the real-browser tests."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path("/tmp/hostsite-shots")


@contextlib.contextmanager
def chromium_page(monkeypatch, *, width: int, height: int, color_scheme: str | None = None) -> Iterator:
    """A page in a fresh headless Chromium, in `color_scheme` ("light", "dark") when given;
    skips (fails in CI: HOSTSITE_BROWSER_REQUIRED=1) where Playwright or Debian's chromium is
    missing. Dialogs are dismissed and kept in page.dialogs, so a test can assert that no
    script ran."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright missing: see requirements-dev.txt"
    )
    if not os.access(CHROMIUM, os.X_OK):
        reason = f"{CHROMIUM} missing: install the Debian package chromium"
        if os.environ.get("HOSTSITE_BROWSER_REQUIRED") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    # Playwright's sync API keeps an asyncio loop on this thread; the test's own ORM calls
    # between browser steps are still synchronous.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
        )
        options = {"color_scheme": color_scheme} if color_scheme else {}
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.dialogs = dialogs
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def expect(target):
    """Playwright's expect, the way to wait for a page to change: it polls from Playwright's own
    script world. page.wait_for_function polls a function in the page, which needs eval, and
    the site's CSP (script-src 'self') refuses that unless the condition holds at once."""
    return pytest.importorskip("playwright.sync_api").expect(target)
