"""Line comments in a real browser: Playwright driving Debian's headless Chromium against the
real gunicorn server. Comment on a line and a range, reply, resolve, see threads follow a new
revision or go outdated, apply a suggestion."""

from __future__ import annotations

import pytest

from reviews import services
from reviews.models import Comment, Thread
from tests.browser import chromium_page, shot
from tests.reviews.test_browser import PASSWORD, XSS, sign_in, sign_out
from tests.reviews.threads_util import REF, TEN

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def write_and_push(pusher, text: str, message: str) -> str:
    (pusher.work / "code.txt").write_text(text)
    pusher.git("add", "code.txt", check=True)
    pusher.git("commit", "--quiet", "-m", message, check=True)
    assert pusher.push(f"HEAD:{REF}").returncode == 0
    return pusher.git("rev-parse", "HEAD", check=True).stdout.strip()


def line_cell(page, number: int):
    """The new-side number cell of the diff line `number` of code.txt."""
    rows = page.locator("section.difffile[data-path='code.txt'] table.diff tr:not(.hunk):not(.annotation)")
    return rows.nth(number - 1).locator("td.ln").nth(1)


def open_thread(page, body: str, *cells, shift_last=False) -> Thread:
    before = set(Thread.objects.values_list("pk", flat=True))
    for i, cell in enumerate(cells):
        cell.click(modifiers=["Shift"] if shift_last and i == len(cells) - 1 else [])
    page.fill("form.thread-new textarea[name=body]", body)
    page.click("form.thread-new button[type=submit]")
    page.wait_for_load_state()
    (thread,) = Thread.objects.exclude(pk__in=before)
    assert page.locator(f"#thread-{thread.pk}").count() == 1
    return thread


def shown_below(page, thread: Thread) -> str:
    """The new line number of the diff row a thread is shown below."""
    return page.evaluate(
        """(id) => {
            let row = document.getElementById(id).closest("tr");
            while (row && row.classList.contains("annotation")) row = row.previousElementSibling;
            return row ? row.children[1].textContent.trim() : "";
        }""",
        f"thread-{thread.pk}",
    )


def test_comment_reply_resolve_follow_and_apply(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    maint = world.add("maint", "maintainer")
    for pusher in (alice, maint):
        pusher.user.set_password(PASSWORD)
        pusher.user.save()
    write_and_push(alice, TEN, "Add code")
    proposal = services.proposal_open(
        repo=world.repo, user=alice.user, source_ref=REF, target_branch="main", title="Code"
    )
    url = f"{base}/owner/project/proposals/{proposal.number}"

    # The maintainer comments on line 5, on lines 2-3 with a suggestion, and on line 9.
    sign_in(page, base, "maint")
    page.goto(url)
    on_five = open_thread(page, f"Why five? {XSS}", line_cell(page, 5))
    assert "Why five?" in page.inner_text(f"#thread-{on_five.pk}")
    assert shown_below(page, on_five) == "5"
    suggestion = open_thread(
        page, "```suggestion\nTWO\nTHREE\n```", line_cell(page, 2), line_cell(page, 3), shift_last=True
    )
    assert (suggestion.line_start, suggestion.line_end) == (2, 3)
    on_nine = open_thread(page, "Nine is odd", line_cell(page, 9))

    # A reply, then resolved: collapsed, and the count goes down.
    page.fill(f"#thread-{on_five.pk} .thread-reply textarea", "Answered below.")
    page.click(f"#thread-{on_five.pk} .thread-reply button")
    page.wait_for_load_state()
    assert on_five.comments.count() == 2
    page.click(f"#thread-{on_five.pk} .thread-resolve button")
    page.wait_for_load_state()
    assert page.locator(f"#thread-{on_five.pk}.resolved > details:not([open])").count() == 1
    assert "2 unresolved threads of 3" in page.inner_text("#thread-count")
    shot(page, "threads-commented.png")
    sign_out(page)

    # Alice pushes a line above everything and changes line 9: five follows, nine is outdated.
    head = write_and_push(alice, "top\n" + TEN.replace("line 9\n", "line nine\n"), "Rework")
    services.revision_record(proposal=proposal, head=head)
    sign_in(page, base, "alice")
    page.goto(url)
    assert shown_below(page, on_five) == "6"
    assert shown_below(page, suggestion) == "4"
    outdated = page.inner_text("#threads")
    assert "Nine is odd" in outdated and "outdated" in outdated
    assert page.locator(f"#threads #thread-{on_nine.pk} .thread-context").count() == 1

    # Alice applies the suggestion: a commit on her ref, carried to lines 3-4.
    page.click(f"#thread-{suggestion.pk} .apply-suggestion button")
    page.wait_for_load_state()
    assert "Suggestion applied" in page.inner_text(".messages")
    applied = Comment.objects.get(thread=suggestion).suggestion_applied_sha
    assert applied and world.refs()[REF] == applied
    shot(page, "threads-applied.png")
    assert page.dialogs == [] and page.evaluate("window.pwned") is None
