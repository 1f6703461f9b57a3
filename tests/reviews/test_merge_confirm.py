"""Merging from the page is POST-redirect-GET: the button leads to a confirmation naming the
strategy, the target and the revision; the POST redirects whatever happens, so reloading the
result never merges again."""

from __future__ import annotations

import pytest
from django.test import Client

from repos.models import Push
from reviews import services
from reviews.models import ProposalState

pytestmark = pytest.mark.django_db
URL = "/owner/project/proposals/1"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def proposal(scene):
    scene.checkout("feature", "main")
    scene.commit("feature", {"b.txt": "b\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )


def test_the_confirmation_names_strategy_target_and_revision(scene, proposal):
    page = signed_in(scene.maint).get(f"{URL}/merge?strategy=squash")
    assert page.status_code == 200
    html = page.content.decode()
    head = proposal.revisions.get().head_sha
    assert '<dd id="confirm-strategy">squash</dd>' in html
    assert '<code id="confirm-target">main</code>' in html
    assert f'1 (<code class="sha">{head[:12]}</code>)' in html
    assert f'name="head" value="{head}"' in html and 'name="strategy" value="squash"' in html
    assert scene.tip("refs/heads/main") != head and not Push.objects.filter(protocol="web").exists()


def test_confirmation_refusals(scene, proposal):
    assert signed_in(scene.bob).get(f"{URL}/merge?strategy=merge").status_code == 403  # a reader
    unknown = signed_in(scene.maint).get(f"{URL}/merge?strategy=octopus", follow=True)
    assert unknown.redirect_chain == [(URL, 302)] and "Choose a merge strategy" in unknown.content.decode()
    assert Client().get(f"{URL}/merge").status_code == 302  # to the sign-in page


def test_confirming_merges_once_and_reloading_does_not_merge_again(scene, proposal):
    maint = signed_in(scene.maint)
    head = proposal.revisions.get().head_sha
    response = maint.post(f"{URL}/merge", {"strategy": "merge", "head": head})
    assert response.status_code == 302 and response["Location"] == URL
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED
    tip = scene.tip("refs/heads/main")
    # The browser shows the page it was sent to; reloading it is a GET.
    for _ in range(2):
        assert maint.get(URL).status_code == 200
    # Even a resent POST (the back button, a double click) finds it merged and changes nothing.
    again = maint.post(f"{URL}/merge", {"strategy": "merge", "head": head}, follow=True)
    assert "Not merged: Proposal #1 is merged." in again.content.decode()
    assert scene.tip("refs/heads/main") == tip
    assert Push.objects.filter(repository=scene.repo, protocol="web").count() == 1


def test_a_stale_confirmation_refuses_a_new_revision(scene, proposal):
    maint = signed_in(scene.maint)
    page = maint.get(f"{URL}/merge?strategy=merge").content.decode()
    assert "Merge revision 1 into main" in page
    old_head = proposal.revisions.get().head_sha
    scene.checkout("feature")
    scene.commit("sneaky", {"c.txt": "c\n"})
    services.revision_record(proposal=proposal, head=scene.publish("feature", "refs/users/alice/feature"))
    response = maint.post(f"{URL}/merge", {"strategy": "merge", "head": old_head}, follow=True)
    assert "reload and review the new revision" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN


def test_fast_forward_only_when_behind_says_so(scene, proposal):
    from reviews import mergecheck

    scene.checkout("main")
    scene.commit("main moves", {"m.txt": "m\n"})
    scene.publish("main")
    mergecheck.check_proposal(proposal)
    maint = signed_in(scene.maint)
    page = maint.get(f"{URL}/merge?strategy=ff").content.decode()
    assert "1 commit behind <code>main</code> (out of date for fast-forward only)" in page
    response = maint.post(
        f"{URL}/merge", {"strategy": "ff", "head": proposal.revisions.get().head_sha}, follow=True
    )
    assert "cannot be fast-forwarded" in response.content.decode()
