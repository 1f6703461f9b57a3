"""Proposal plumbing: the form's title from the first commit of the work, refs that already have
an open proposal marked and refused before anything is opened, and the workspace pages'
"Propose" and "Proposal #N" links."""

from __future__ import annotations

import pytest
from django.test import Client

from reviews import new_proposal, services
from reviews.models import Proposal
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db
XSS = "<script>window.pwned=1</script>"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def three_commits(scene) -> str:
    scene.checkout("series", "main")
    scene.commit(f"First step {XSS}\n\nWhy the first step.", {"1.txt": "1\n"})
    scene.commit("Second step\n\nWhy the second.", {"2.txt": "2\n"})
    scene.commit("Third step", {"3.txt": "3\n"})
    head = scene.publish("series", "refs/users/alice/series")
    scene.checkout("main")
    return head


def test_title_from_the_first_commit_of_a_three_commit_range(scene):
    three_commits(scene)
    # main moves on: its commits are not the work's, whatever their dates.
    scene.commit("Later on main", {"m.txt": "m\n"})
    scene.publish("main")
    page = signed_in(scene.alice).get("/owner/project/proposals/new?ref=refs/users/alice/series")
    initial = page.context["form"].initial
    assert initial["title"] == f"First step {XSS}"
    assert "description" not in initial  # three commits: no one body speaks for them all
    assert XSS.encode() not in page.content


def test_a_range_too_long_to_walk_takes_the_tips_subject(scene, monkeypatch):
    monkeypatch.setattr(new_proposal, "MAX_RANGE", 2)
    three_commits(scene)
    initial = signed_in(scene.alice).get("/owner/project/proposals/new?ref=series").context["form"].initial
    assert initial["title"] == "Third step" and "description" not in initial


def test_one_commit_gives_title_and_body(scene):
    scene.checkout("one", "main")
    scene.commit("Only step\n\nThe reason.", {"1.txt": "1\n"})
    scene.publish("one", "refs/users/alice/one")
    scene.checkout("main")
    initial = signed_in(scene.alice).get("/owner/project/proposals/new?ref=one").context["form"].initial
    assert (initial["title"], initial["description"]) == ("Only step", "The reason.")


def test_the_range_is_against_the_chosen_target(scene):
    three_commits(scene)
    scene.checkout("stable", "series")
    scene.git("reset", "--quiet", "--hard", "HEAD~1")  # stable has the first two steps
    scene.publish("stable")
    scene.checkout("main")
    initial = (
        signed_in(scene.alice)
        .get("/owner/project/proposals/new?ref=series&target=stable")
        .context["form"]
        .initial
    )
    assert (initial["title"], initial["description"]) == ("Third step", "")


def test_a_proposed_ref_is_marked_linked_and_refused_before_submit(scene):
    three_commits(scene)
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/series",
        target_branch="main",
        title="Series",
    )
    alice = signed_in(scene.alice)
    page = alice.get("/owner/project/proposals/new")
    choices = dict(page.context["form"].fields["source_ref"].choices)
    assert choices["refs/users/alice/series"].endswith(f"(proposal #{proposal.number})")
    assert f'href="/owner/project/proposals/{proposal.number}"' in page.content.decode()
    # Prefilled with that ref: the page leads to the proposal.
    page = alice.get("/owner/project/proposals/new?ref=series").content.decode()
    assert 'id="already-proposed"' in page and f"Proposal #{proposal.number}</a>" in page
    # Submitting it anyway: the form refuses it, naming the proposal, and opens nothing.
    response = alice.post(
        "/owner/project/proposals/new",
        {"source_ref": "refs/users/alice/series", "target_branch": "main", "title": "Again"},
    )
    assert response.status_code == 200 and Proposal.objects.count() == 1
    assert response.context["form"].errors["source_ref"] == [
        f"refs/users/alice/series already has an open proposal: #{proposal.number}."
    ]
    assert f'href="/owner/project/proposals/{proposal.number}"' in response.content.decode()
    # Closed, it is free again.
    services.proposal_close(proposal=proposal, user=scene.alice)
    page = alice.get("/owner/project/proposals/new")
    assert (
        "(proposal #"
        not in dict(page.context["form"].fields["source_ref"].choices)["refs/users/alice/series"]
    )


def test_workspace_pages_link_proposals_and_offer_propose(scene):
    Workspace.objects.create(repository=scene.repo, user=scene.alice)
    three_commits(scene)
    scene.checkout("other", "main")
    scene.commit("Other work", {"o.txt": "o\n"})
    scene.publish("other", "refs/users/alice/other")
    scene.checkout("main")
    scene.publish("main", "refs/users/alice/main")  # a stale copy of main
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/series",
        target_branch="main",
        title="Series",
    )
    link = f'<a class="proposal-link" href="/owner/project/proposals/{proposal.number}">Proposal #{proposal.number}</a>'
    propose = 'href="/owner/project/proposals/new?ref=refs%2Fusers%2Falice%2Fother&amp;target=main"'
    own = signed_in(scene.alice).get("/owner/project/workspaces/alice").content.decode()
    assert link in own and propose in own
    assert own.count('class="button small propose"') == 1  # not for the proposed ref or the stale one
    assert "stale: already on main" in own and "Clean up</button>" in own
    # Others see the proposal link, and the stale flag, but nothing to act on.
    for client in (signed_in(scene.bob), Client()):
        page = client.get("/owner/project/workspaces/alice").content.decode()
        assert link in page and "stale: already on main" in page
        assert "Propose</a>" not in page and "Clean up</button>" not in page
    # The ref's own page too.
    assert link in Client().get("/owner/project/workspaces/alice/series").content.decode()
    ref_page = signed_in(scene.alice).get("/owner/project/workspaces/alice/other").content.decode()
    assert propose in ref_page
    # A stale ref's page: its cleanup leads back to the workspace page (its own page will be gone).
    stale_page = signed_in(scene.alice).get("/owner/project/workspaces/alice/main").content.decode()
    assert 'name="next" value="/owner/project/workspaces/alice"' in stale_page
    # A hidden workspace: its page is missing to outsiders, admins still see the links.
    Workspace.objects.filter(repository=scene.repo, user=scene.alice).update(hidden=True)
    assert Client().get("/owner/project/workspaces/alice").status_code == 404
    assert link in signed_in(scene.owner).get("/owner/project/workspaces/alice").content.decode()  # an admin
