"""End to end: a real `git push` to the live server, a real Celery worker keeping the index,
and a real browser finding the pushed file from the header's search box."""

from __future__ import annotations

import pytest

from search.models import CodeFile, CommitEntry, IndexState
from tests.browser import chromium_page
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _paths(repo) -> dict[str, str]:
    return dict(CodeFile.objects.filter(repository=repo).values_list("path", "content"))


def test_a_push_indexes_changed_files_and_drops_deleted_ones(celery_worker_process, world, monkeypatch):
    owner = world.owner
    owner.commit("def lighthouse_keeper():\n    return 'lamp'", name="src/keeper.py")
    owner.commit("obsolete zeppelin notes", name="docs/old.txt")
    assert owner.push("main").returncode == 0
    repo = world.repo
    wait_until(
        lambda: (
            {"src/keeper.py", "docs/old.txt"} <= set(_paths(repo))
            and CommitEntry.objects.filter(repository=repo).count() == 3
        ),
        timeout=90,
        what=lambda: f"the pushed files indexed; worker log:\n{celery_worker_process.log(limit=3000)}",
        alive=celery_worker_process,
    )

    owner.git("rm", "--quiet", "docs/old.txt", check=True)
    head = owner.commit("    return 'brighter lamp'", name="src/keeper.py")
    assert owner.push("main").returncode == 0
    wait_until(
        lambda: IndexState.objects.filter(repository=repo, code_commit=head, commit_tips=[head]).exists(),
        timeout=90,
        what="the second push indexed",
        alive=celery_worker_process,
    )
    paths = _paths(repo)
    assert "docs/old.txt" not in paths
    assert "brighter lamp" in paths["src/keeper.py"]
    assert CommitEntry.objects.filter(repository=repo, sha=head).exists()

    # The header's box finds the file; its result opens the file at the matching line.
    with chromium_page(monkeypatch, width=1280, height=800) as page:
        page.goto(f"http://{world.host}/")
        box = page.locator("header form[role=search] input[name=q]")
        box.fill("brighter lamp")
        with page.expect_navigation(wait_until="load"):
            box.press("Enter")
        assert "/search?q=brighter+lamp" in page.url
        result = page.locator(".search-results .search-title").first
        # Readable on a phone: no sideways scrolling.
        page.set_viewport_size({"width": 360, "height": 740})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.set_viewport_size({"width": 1280, "height": 800})
        assert result.inner_text() == "src/keeper.py"
        assert page.locator(".search-results mark").first.inner_text().lower() == "brighter lamp"
        with page.expect_navigation(wait_until="load"):
            result.click()
        assert page.url.endswith(f"/owner/project/blob/{head}/src/keeper.py#L3")
        line = page.locator("tr#L3")
        assert "brighter lamp" in line.inner_text()
        assert line.is_visible()
        assert not page.dialogs
