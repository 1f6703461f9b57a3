"""The merge box and the confirmation in a real browser: a rule blocks, then approvals allow,
the confirmation's POST redirects and a reload merges nothing; conflicts are listed before the
button. Playwright driving Debian's headless Chromium against the real gunicorn server."""

from __future__ import annotations

import pytest

from repos.models import Push
from reviews import mergecheck, services
from reviews.models import Proposal, ProposalState
from tests.browser import chromium_page, shot
from workspaces import services as ws_services

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

PASSWORD = "plinth-orbit-73-quarry"


@pytest.fixture
def browser_page(monkeypatch):
    with chromium_page(monkeypatch, width=1280, height=900) as page:
        yield page


def sign_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/login")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_load_state()


def propose(world, alice, ref: str, title: str) -> Proposal:
    return services.proposal_open(
        repo=world.repo, user=alice.user, source_ref=ref, target_branch="main", title=title
    )


def test_merge_box_states_and_the_confirmation(world, browser_page, live_server_url):
    page, base = browser_page, live_server_url
    alice = world.add("alice")
    maint = world.add("maint", "maintainer")
    maint.user.set_password(PASSWORD)
    maint.user.save()
    ws_services.protected_branch_set(repo=world.repo, name="main", required_approvals=1)
    alice.commit("clean change", name="clean.txt")
    assert alice.push("HEAD:refs/users/alice/clean").returncode == 0
    proposal = propose(world, alice, "refs/users/alice/clean", "Clean")

    sign_in(page, base, "maint")
    page.goto(f"{base}/owner/project/proposals/1")
    assert page.locator("#merge-checking").count() == 1  # no check yet: the page asks a worker
    assert "0 of 1 required approval" in page.inner_text("#merge-status")
    mergecheck.check_proposal(proposal)
    page.reload()
    assert page.locator("#merge-clean").count() == 1
    shot(page, "merge-box-rules-missing.png")

    # Blocked by the rule: the confirmation, then back to the page with the reason.
    page.select_option("#merge-strategy", "rebase")
    page.click("#merge-form button[type=submit]")
    page.wait_for_load_state()
    assert page.inner_text("#confirm-strategy") == "rebase"
    assert page.inner_text("#confirm-target") == "main"
    assert page.inner_text("#confirm-revision").startswith("1 (")
    page.click("#confirm-merge")
    page.wait_for_url(f"{base}/owner/project/proposals/1")
    assert "merge rules are not met" in page.inner_text(".messages")
    assert Proposal.objects.get(pk=proposal.pk).state == ProposalState.OPEN

    # Approved: the rule is met and the merge goes through; reloading merges nothing.
    page.click("text=Approve revision 1")
    page.wait_for_load_state()
    assert "1 of 1 required approval" in page.inner_text("#merge-status")
    page.select_option("#merge-strategy", "rebase")
    page.click("#merge-form button[type=submit]")
    page.wait_for_load_state()
    page.click("#confirm-merge")
    page.wait_for_url(f"{base}/owner/project/proposals/1")
    assert "Merged into main" in page.inner_text(".messages")
    page.reload()
    assert page.inner_text("#proposal-state") == "merged"
    assert Push.objects.filter(repository=world.repo, protocol="web").count() == 1

    # A proposal that conflicts with main is listed with its files before the button.
    alice.git("checkout", "--quiet", "-b", "clash", "origin/main", check=True)
    alice.git("fetch", "--quiet", alice.remote, "main", check=True)
    alice.git("reset", "--quiet", "--hard", "FETCH_HEAD", check=True)
    alice.commit("alice's line", name="clean.txt")
    assert alice.push("HEAD:refs/users/alice/clash").returncode == 0
    clash = propose(world, alice, "refs/users/alice/clash", "Clash")
    maint.git("pull", "--quiet", maint.remote, "main", check=True)
    maint.commit("maint's line", name="clean.txt")
    assert maint.push("HEAD:refs/heads/main").returncode == 0
    mergecheck.check_proposal(clash)
    page.goto(f"{base}/owner/project/proposals/{clash.number}")
    assert "clean.txt" in page.inner_text("#merge-conflicts")
    shot(page, "merge-box-conflicts.png")
    assert page.dialogs == []
