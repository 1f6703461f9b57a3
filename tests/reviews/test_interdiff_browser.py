"""The interdiff in a real browser: a proposal rebased onto a moved target with one line
amended, compared from the revision picker on the proposal page. Playwright driving Debian's
headless Chromium against the real gunicorn server, the work pushed with real git."""

from __future__ import annotations

import pytest

from reviews import services
from reviews.models import Proposal
from tests.browser import chromium_page, shot

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

REF = "refs/users/alice/feature"
B = "".join(f"line {i} of b\n" for i in range(1, 21))


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def write_commit(pusher, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (pusher.work / name).write_text(text)
        pusher.git("add", name, check=True)
    pusher.git("commit", "--quiet", "-m", message, check=True)


def test_interdiff_across_a_rebase_from_the_picker(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    write_commit(alice, {"b.txt": B}, "add b")
    write_commit(alice, {"c.txt": "<script>window.pwned=1</script>\n"}, "add c")
    assert alice.push(f"HEAD:{REF}").returncode == 0
    proposal = services.proposal_open(
        repo=world.repo, user=alice.user, source_ref=REF, target_branch="main", title="b and c"
    )
    # The target moves on; alice rebases onto it and amends one line of her first commit.
    world.owner.commit("upstream work", name="upstream.txt")
    assert world.owner.push("main").returncode == 0
    alice.git("fetch", "--quiet", "origin", "main", check=True)
    alice.git("rebase", "--quiet", "FETCH_HEAD", check=True)
    alice.git("checkout", "--quiet", "HEAD~1", check=True)
    (alice.work / "b.txt").write_text(B.replace("line 2 of b", "line 2 of b, fixed"))
    alice.git("commit", "--quiet", "--amend", "--no-edit", "b.txt", check=True)
    alice.git("cherry-pick", "--quiet", "@{-1}", check=True)
    head = alice.git("rev-parse", "HEAD", check=True).stdout.strip()
    assert alice.push(f"+HEAD:{REF}").returncode == 0
    # What the push's Celery task does (no worker runs in this test).
    second = services.revision_record(proposal=Proposal.objects.get(pk=proposal.pk), head=head)
    assert second is not None and second.number == 2

    page.goto(f"{base}/owner/project/proposals/1")
    assert page.locator("#changes-since").inner_text() == "Changes since revision 1"
    page.select_option("#compare-from", "2")
    page.select_option("#compare-to", "1")  # either order
    page.click("#revision-compare button[type=submit]")
    page.wait_for_url(f"{base}/owner/project/proposals/1/interdiff/1..2")
    shot(page, "interdiff-across-rebase.png")
    files = page.locator("section.difffile")
    assert files.count() == 1 and files.first.get_attribute("data-path") == "b.txt"
    assert page.locator("table.diff tr.del td.code").inner_text() == "-line 2 of b"
    assert page.locator("table.diff tr.add td.code").inner_text() == "+line 2 of b, fixed"
    assert page.locator("table.diff tr.add td.code ins").inner_text() == ", fixed"
    assert "upstream.txt" not in page.inner_text("main")
    assert page.locator("#interdiff-rebased").count() == 1

    page.click("text=git range-diff")
    page.wait_for_url(f"{base}/owner/project/proposals/1/interdiff/1..2.txt")
    text = page.inner_text("body")
    assert "! 1:" in text and "add b" in text and "= 2:" in text
    assert page.dialogs == [] and page.evaluate("window.pwned") is None
