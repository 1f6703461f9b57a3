"""An import in a real browser: Playwright driving Debian's headless Chromium against gunicorn
and a real Celery worker. The user fills in /new with a URL, lands on the repository page, sees
the progress move (the page's own script, under the site's CSP), and then the files."""

from __future__ import annotations

import subprocess

import pytest

from repos.models import ImportState, RepositoryImport
from tests.browser import chromium_page, expect, shot
from tests.factories import UserFactory
from tests.sources.importlive import history_stream, serve, source_env

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
PASSWORD = "slate-harbor-19-lantern"


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "src.git"
    env = source_env(tmp_path / "home")
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(path)], env=env, check=True)
    subprocess.run(
        ["git", "--git-dir", str(path), "fast-import", "--quiet"],
        input=history_stream(8000),
        env=env,
        check=True,
        timeout=300,
    )
    return path


def test_import_from_the_new_page_shows_live_progress_then_the_files(
    monkeypatch, source, celery_worker_process, live_server_url
):
    serve(source, "upstream", "big")
    user = UserFactory(username="nina")
    user.set_password(PASSWORD)
    user.save()
    errors: list[str] = []
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        # Script errors and refused scripts (CSP); failed loads are judged by URL below.
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
        page.goto(f"{live_server_url}/login")
        page.fill("input[name=username]", "nina")
        page.fill("input[name=password]", PASSWORD)
        page.click("main button[type=submit]")
        page.wait_for_load_state()
        page.goto(f"{live_server_url}/new")
        page.fill("input[name=name]", "copy")
        page.click("details.import-fields summary")
        page.fill("input[name=import_url]", f"{live_server_url}/upstream/big.git")
        page.click("main button[type=submit]")
        page.wait_for_url(f"{live_server_url}/nina/copy")
        assert page.locator("#import-status").count() == 1
        assert "Cancel import" in page.inner_text("main")
        # The page's script replaces the phase the server rendered with what git reports, and
        # reloads the page once the import is done (only the script can: the page has no
        # refresh of its own, so the files appearing proves it polled).
        first = page.inner_text("[data-import=phase]")
        moved = page.locator("[data-import=phase]").filter(has_not_text=first)
        expect(moved.or_(page.get_by_text("Recent commits")).first).to_be_visible(timeout=60_000)
        shot(page, "import-progress.png")
        page.wait_for_selector("text=Recent commits", timeout=120_000)
        shot(page, "import-done.png")
        assert page.locator("#import-status").count() == 0
    imp = RepositoryImport.objects.get(full_name="nina/copy")
    assert imp.state == ImportState.DONE, imp.message
    assert not errors, errors  # no script blocked by the CSP, no failed request
