"""Proposal pages: list, new, detail, revisions, and the forms they post."""

from __future__ import annotations

import pytest
from django.test import Client

from gitcore.git import run_git
from repos.pushes import Update, push_record
from reviews import services
from reviews.models import Proposal, ProposalState

pytestmark = pytest.mark.django_db
XSS = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def feature(scene, files=None, ref="refs/users/alice/feature"):
    scene.checkout("feature", "main")
    scene.commit("feature work", files or {"b.txt": "first version\n"})
    head = scene.publish("feature", ref)
    scene.checkout("main")
    return head


def test_new_proposal_form_lists_own_refs_and_opens_one(scene):
    feature(scene)
    alice = signed_in(scene.alice)
    page = alice.get("/owner/project/proposals/new")
    assert page.status_code == 200
    assert b'value="refs/users/alice/feature"' in page.content
    response = alice.post(
        "/owner/project/proposals/new",
        {
            "source_ref": "refs/users/alice/feature",
            "target_branch": "main",
            "title": "Add b",
            "description": "Because.",
        },
    )
    assert response.status_code == 302 and response["Location"] == "/owner/project/proposals/1"
    # Someone else's ref is not a choice: the form refuses it.
    bob = signed_in(scene.bob)
    refused = bob.post(
        "/owner/project/proposals/new",
        {"source_ref": "refs/users/alice/feature", "target_branch": "main", "title": "Mine"},
    )
    assert refused.status_code == 200 and Proposal.objects.count() == 1
    assert Client().get("/owner/project/proposals/new").status_code == 302  # to sign-in


def test_new_proposal_form_is_prefilled_from_the_query_and_the_commit(scene):
    scene.checkout("feature", "main")
    scene.commit(f"Add b {XSS}\n\nBecause {XSS}.", {"b.txt": "b\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.publish("feature", "refs/users/bob/theirs")
    scene.publish("feature", "refs/heads/stable")
    scene.checkout("main")
    alice = signed_in(scene.alice)
    page = alice.get("/owner/project/proposals/new?ref=refs/users/alice/feature&target=stable")
    assert page.status_code == 200
    initial = page.context["form"].initial
    assert initial["source_ref"] == "refs/users/alice/feature" and initial["target_branch"] == "stable"
    assert initial["title"] == f"Add b {XSS}" and initial["description"] == f"Because {XSS}."
    assert XSS.encode() not in page.content and b"Add b &lt;script&gt;" in page.content
    # The short name works too (the workspace pages use it).
    assert (
        alice.get("/owner/project/proposals/new?ref=feature")
        .context["form"]
        .initial["title"]
        .startswith("Add b")
    )
    # Someone else's ref, unknown refs and branches, and garbage: ignored, never an error.
    for query in (
        "ref=refs/users/bob/theirs&target=nope",
        "ref=refs/users/alice/missing&target=refs/heads/main",
        "ref=%00%ff&target=%0d%0aX",
        "ref=../../etc/passwd&ref=x&target=",
        "ref=" + "a" * 5000,
    ):
        page = alice.get(f"/owner/project/proposals/new?{query}")
        assert page.status_code == 200, query
        initial = page.context["form"].initial
        assert initial == {"target_branch": "main"}, query
    # A ref at a blob: chosen, but there is no commit to take a title from.
    blob = run_git(["hash-object", "-w", "--stdin"], repo=scene.bare, input=b"x\n").stdout.decode().strip()
    run_git(["update-ref", "refs/users/alice/blob", blob], repo=scene.bare)
    page = alice.get("/owner/project/proposals/new?ref=refs/users/alice/blob")
    assert page.status_code == 200
    assert page.context["form"].initial == {"target_branch": "main", "source_ref": "refs/users/alice/blob"}


def test_list_and_detail_show_everything_escaped(scene):
    feature(scene, {"b.txt": f"{XSS}\n"})
    proposal = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title=f"Title {XSS}",
        description=f"Text {XSS}",
    )
    services.comment_add(
        proposal=proposal, user=scene.bob, body=f"Comment **bold** [link](javascript:alert(1)) {XSS}"
    )
    anonymous = Client()
    listing = anonymous.get("/owner/project/proposals").content.decode()
    assert "Title &lt;script&gt;" in listing and "<script>window" not in listing
    assert 'aria-current="page">Proposals<' in listing.replace("\n", "")
    page = anonymous.get("/owner/project/proposals/1").content.decode()
    assert (
        "<script>window" not in page
        and "<img src=x onerror" not in page
        and "onerror=" not in page.replace("onerror=alert(1)&gt;", "")
        and 'href="javascript' not in page
    )
    # Plain text where text is shown (title twice, the diff); sanitized Markdown in the
    # description and comments.
    assert page.count("&lt;script&gt;window.pwned=1&lt;/script&gt;") == 3
    assert "Comment <strong>bold</strong>" in page and "Text " in page
    assert "Revision 1" in page and "feature work" in page
    assert "merge-form" not in page and "Approve" not in page  # anonymous: no buttons
    assert anonymous.get("/owner/project/proposals?state=closed").status_code == 200
    for path in (
        "/owner/project/proposals/2",
        "/owner/project/proposals/1/revisions/9",
        "/owner/project/proposals/99999999999999999999",
    ):
        assert anonymous.get(path).status_code == 404, path


def test_old_revisions_stay_viewable(scene, django_capture_on_commit_callbacks, enqueued):
    first = feature(scene, {"b.txt": "first version\n"})
    services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )
    second = feature(scene, {"b.txt": "second version\n"})
    with django_capture_on_commit_callbacks(execute=True):
        push_record(
            repo=scene.repo, pusher=scene.alice, updates=[Update(first, second, "refs/users/alice/feature")]
        )
    client = Client()
    latest = client.get("/owner/project/proposals/1").content.decode()
    assert "second version" in latest and "first version" not in latest
    old = client.get("/owner/project/proposals/1/revisions/1").content.decode()
    assert "first version" in old and "second version" not in old
    assert "the latest is" in old


def test_maintainer_approves_and_merges_from_the_page(scene):
    feature(scene)
    services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )
    maint = signed_in(scene.maint)
    page = maint.get("/owner/project/proposals/1").content.decode()
    assert "merge-box" in page and "Approve revision 1" in page
    author_page = signed_in(scene.alice).get("/owner/project/proposals/1").content.decode()
    assert "merge-form" not in author_page and "Approve revision" not in author_page
    assert maint.post("/owner/project/proposals/1/approve").status_code == 302
    approved = maint.get("/owner/project/proposals/1").content.decode()
    assert "approved revision 1" in approved and "Approve revision" not in approved  # once per revision
    assert (
        signed_in(scene.alice).post("/owner/project/proposals/1/merge", {"strategy": "merge"}).status_code
        == 302
    )
    assert Proposal.objects.get().state == ProposalState.OPEN  # refused, with a message
    response = maint.post("/owner/project/proposals/1/merge", {"strategy": "squash"}, follow=True)
    assert "Merged into main" in response.content.decode()
    assert Proposal.objects.get().state == ProposalState.MERGED


def test_merge_conflict_is_shown_with_the_files(scene):
    feature(scene, {"a.txt": "one\nTWO\nthree\n"})
    services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Change a",
    )
    scene.commit("main", {"a.txt": "one\n2\nthree\n"})
    before = scene.publish("main")
    response = signed_in(scene.maint).post(
        "/owner/project/proposals/1/merge", {"strategy": "rebase"}, follow=True
    )
    # Redirected to the page (a reload merges nothing), the files in the message.
    assert response.redirect_chain == [("/owner/project/proposals/1", 302)]
    page = response.content.decode()
    assert "Not merged: Rebasing" in page and "a.txt" in page
    assert scene.tip("refs/heads/main") == before


def test_forms_need_csrf(scene):
    feature(scene)
    services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )
    client = Client(enforce_csrf_checks=True)
    client.force_login(scene.maint)
    for action in ("merge", "approve", "comment", "edit", "state"):
        assert (
            client.post(f"/owner/project/proposals/1/{action}", {"strategy": "ff", "body": "x"}).status_code
            == 403
        )
    assert Proposal.objects.get().state == ProposalState.OPEN
