"""README images from other sites in a real browser: Debian's headless Chromium (Playwright)
against the real gunicorn server, the "external" host a server of the test's own on loopback.
The page's CSP allows images from our origin only, so each image must come through the proxy."""

from __future__ import annotations

import pytest

from tests.browser import chromium_page, shot
from tests.repos.histories import Work
from tests.repos.imagehost import image_host
from tests.repos.test_documents import CELLS, notebook

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def test_external_readme_images_load_through_the_proxy_without_csp_violations(
    browser_page, live_server_url, tmp_path, git_home
):
    page, base = browser_page, live_server_url
    with image_host() as host:
        work = Work(tmp_path / "work", git_home)
        work.commit(
            "readme",
            {
                "README.md": f"# Badges\n\n![build]({host('/b/badge.svg')}) ![logo]({host('/b/good.png')})\n",
                "docs/index.rst": f"Docs\n====\n\n.. image:: {host('/r/good.png')}\n   :alt: rst-logo\n",
                "analysis.ipynb": notebook(CELLS),
            },
        )
        work.publish()
        console: list[str] = []
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
        failed: list[str] = []
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)

        page.goto(f"{base}/olga/proj", wait_until="load")
        shot(page, "readme-external-images.png")
        images = page.locator(".readme img")
        assert images.count() == 2
        for i in range(2):
            image = images.nth(i)
            assert image.get_attribute("src").startswith("/_img/")
            assert image.evaluate("img => img.complete && img.naturalWidth") > 0, image.get_attribute("alt")

        page.goto(f"{base}/olga/proj/blob/main/docs/index.rst", wait_until="load")
        image = page.locator(".markdown img[alt=rst-logo]")
        assert image.evaluate("img => img.complete && img.naturalWidth") == 3

        # A notebook: its PNG output is a data: URI, its styles our own.
        page.goto(f"{base}/olga/proj/blob/main/analysis.ipynb", wait_until="load")
        shot(page, "notebook.png")
        image = page.locator(".notebook img.nb-image")
        assert image.evaluate("img => img.complete && img.naturalWidth") == 3
        assert page.locator(".nb-prompt").first.evaluate("e => getComputedStyle(e).textAlign") == "right"
        assert page.dialogs == []  # the HTML output's script and onerror never ran

        # Our origin, never the third party, was asked by the browser; the host saw the proxy.
        assert {request["headers"].get("User-Agent") for request in host.seen} == {
            "hostsite-imageproxy/1 (images shown in rendered documents)"
        }
        assert not [line for line in console if "Content Security Policy" in line], console
        # Every resource of the pages loaded; Chromium's own favicon request (not a resource
        # of the page, so not in `failed`) may log a 404 until the site has a favicon.
        # (but the notebook's hostile `<img src=x>`, a relative link to a file that is not there)
        assert [url for url in failed if not url.endswith("/olga/proj/raw/main/x")] == []
        assert [line for line in console if "error" in line and "Failed to load resource" not in line] == []
