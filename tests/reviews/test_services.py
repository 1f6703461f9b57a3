"""Proposal services: who may do what, hostile input, and revisions that follow the ref."""

from __future__ import annotations

import pytest

from repos.errors import Conflict, Forbidden, InvalidInput
from repos.pushes import Update, push_record
from reviews import services
from reviews.models import Approval, ProposalState

pytestmark = pytest.mark.django_db


def feature(scene, ref="refs/users/alice/feature", text="bee\n"):
    scene.checkout("feature", "main")
    sha = scene.commit("feature", {"b.txt": text})
    scene.publish("feature", ref)
    scene.checkout("main")
    return sha


def open_(scene, user=None, ref="refs/users/alice/feature", **kwargs):
    values = {"title": "Add b", "description": "", **kwargs}
    return services.proposal_open(
        repo=scene.repo, user=user or scene.alice, source_ref=ref, target_branch="main", **values
    )


def test_open_numbers_proposals_and_records_revision_one(scene):
    head = feature(scene)
    base = scene.tip("refs/heads/main")
    first = open_(scene)
    assert (first.number, first.state, first.author) == (1, ProposalState.OPEN, scene.alice)
    revision = first.revisions.get()
    assert (revision.number, revision.head_sha, revision.base_sha) == (1, head, base)
    feature(scene, "refs/users/alice/other", "other\n")
    assert open_(scene, ref="other").number == 2  # a bare name means the proposer's own workspace


def test_only_the_workspace_owner_or_an_admin_proposes(scene):
    feature(scene)
    with pytest.raises(Forbidden):
        open_(scene, user=scene.bob)
    with pytest.raises(Forbidden):
        open_(scene, user=scene.maint)
    proposal = open_(scene, user=scene.owner)  # the repository's owner is admin
    assert proposal.author == scene.alice


@pytest.mark.parametrize(
    ("ref", "target", "error"),
    [
        ("refs/users/alice/missing", "main", InvalidInput),
        ("refs/users/alice/feature", "no-such-branch", InvalidInput),
        ("refs/heads/main", "main", InvalidInput),
        ("refs/users/alice/../x", "main", InvalidInput),
        ("refs/users/alice/feature", "-bad", InvalidInput),
    ],
)
def test_open_refuses_bad_refs(scene, ref, target, error):
    feature(scene)
    with pytest.raises(error):
        services.proposal_open(
            repo=scene.repo, user=scene.alice, source_ref=ref, target_branch=target, title="t"
        )


def test_open_refuses_nothing_new_and_duplicates(scene):
    scene.publish("main", "refs/users/alice/same")
    with pytest.raises(Conflict):
        open_(scene, ref="refs/users/alice/same")
    feature(scene)
    open_(scene)
    with pytest.raises(Conflict):
        open_(scene)


def test_hostile_titles_and_descriptions(scene):
    feature(scene)
    for bad in ("", "   ", "\x00\x01", "x" * 201):
        with pytest.raises(InvalidInput):
            open_(scene, title=bad)
    with pytest.raises(InvalidInput):
        open_(scene, description="d" * 20_001)
    proposal = open_(
        scene, title="Fix\x00 the\r\nthing\u202e", description="line\x00 one\r\nline two\x1b[31m"
    )
    assert proposal.title == "Fix  the  thing"
    assert proposal.description == "line one\nline two[31m"


def test_edit_close_reopen_permissions(scene):
    feature(scene)
    proposal = open_(scene)
    with pytest.raises(Forbidden):
        services.proposal_edit(proposal=proposal, user=scene.bob, title="mine now")
    services.proposal_edit(proposal=proposal, user=scene.maint, title="Better title")
    services.proposal_edit(proposal=proposal, user=scene.alice, description="More words.")
    proposal.refresh_from_db()
    assert (proposal.title, proposal.description) == ("Better title", "More words.")
    with pytest.raises(Forbidden):
        services.proposal_close(proposal=proposal, user=scene.bob)
    services.proposal_close(proposal=proposal, user=scene.alice)
    with pytest.raises(Conflict):
        services.proposal_approve(proposal=proposal, user=scene.maint)
    services.proposal_reopen(proposal=proposal, user=scene.maint)
    assert proposal.state == ProposalState.OPEN


def test_comments_need_a_signed_in_reader(scene):
    from django.contrib.auth.models import AnonymousUser

    feature(scene)
    proposal = open_(scene)
    with pytest.raises(Forbidden):
        services.comment_add(proposal=proposal, user=AnonymousUser(), body="hi")
    with pytest.raises(InvalidInput):
        services.comment_add(proposal=proposal, user=scene.bob, body=" \x00 ")
    comment = services.comment_add(proposal=proposal, user=scene.bob, body="<b>looks</b> good")
    assert comment.body == "<b>looks</b> good" and comment.revision.number == 1


def test_approvals_by_maintainers_only_and_stale_after_a_new_revision(
    scene, django_capture_on_commit_callbacks, enqueued
):
    first = feature(scene)
    proposal = open_(scene)
    for user in (scene.alice, scene.bob):
        with pytest.raises(Forbidden):
            services.proposal_approve(proposal=proposal, user=user)
    services.proposal_approve(proposal=proposal, user=scene.maint)

    scene.checkout("feature")
    second = scene.commit("more", {"c.txt": "sea\n"})
    scene.publish("feature", "refs/users/alice/feature")
    with django_capture_on_commit_callbacks(execute=True):
        push_record(
            repo=scene.repo, pusher=scene.alice, updates=[Update(first, second, "refs/users/alice/feature")]
        )
    latest = proposal.revisions.order_by("-number").first()
    assert (latest.number, latest.head_sha) == (2, second) and latest.push is not None
    from reviews.selectors import approvals

    assert [(a.username, a.stale) for a in approvals(proposal, latest)] == [("maint", True)]
    services.proposal_approve(proposal=proposal, user=scene.maint)  # approving again moves it
    assert Approval.objects.get(proposal=proposal).head_sha == second
    assert [(a.username, a.stale) for a in approvals(proposal, latest)] == [("maint", False)]


def test_deleting_the_ref_keeps_the_last_revision(scene, django_capture_on_commit_callbacks, enqueued):
    head = feature(scene)
    proposal = open_(scene)
    with django_capture_on_commit_callbacks(execute=True):
        push_record(
            repo=scene.repo, pusher=scene.alice, updates=[Update(head, "0" * 40, "refs/users/alice/feature")]
        )
    assert list(proposal.revisions.values_list("number", "head_sha")) == [(1, head)]
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN


def test_a_push_that_brings_the_head_into_the_target_merges_the_proposal(
    scene, django_capture_on_commit_callbacks, enqueued
):
    head = feature(scene)
    proposal = open_(scene)
    other = feature(scene, "refs/users/alice/other", "other\n")
    open_(scene, ref="refs/users/alice/other")
    old = scene.tip("refs/heads/main")
    scene.git("merge", "--quiet", "--ff-only", head)
    scene.publish("main")
    with django_capture_on_commit_callbacks(execute=True):
        push = push_record(
            repo=scene.repo, pusher=scene.maint, updates=[Update(old, head, "refs/heads/main")]
        )
    proposal.refresh_from_db()
    assert (proposal.state, proposal.merge_push, proposal.merged_by, proposal.merged_sha) == (
        ProposalState.MERGED,
        push,
        scene.maint,
        head,
    )
    assert proposal.merge_strategy == ""
    still_open = services.selectors.proposals_for(scene.repo, ProposalState.OPEN)
    assert [p.source_ref for p in still_open] == ["refs/users/alice/other"] and other


def test_cleanup_archiving_a_squashed_ref_marks_its_proposal_merged(
    scene, django_capture_on_commit_callbacks, enqueued
):
    from datetime import timedelta

    from django.utils import timezone

    from workspaces.models import ArchivedRef
    from workspaces.signals import workspace_ref_archived

    head = feature(scene)
    proposal = open_(scene)
    old = scene.tip("refs/heads/main")
    squashed = scene.commit("squashed by hand", {"b.txt": "bee\n"})
    scene.publish("main")
    with django_capture_on_commit_callbacks(execute=True):
        push = push_record(
            repo=scene.repo, pusher=scene.maint, updates=[Update(old, squashed, "refs/heads/main")]
        )
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN  # not an ancestor: a push alone cannot tell

    def archived(branch):
        ArchivedRef.objects.create(
            repository=scene.repo,
            username="alice",
            ref="refs/users/alice/feature",
            sha=head,
            archive_ref=f"refs/archive/alice/{branch}",
            branch=branch,
            how="squashed",
            reason=f"squashed into {branch}",
            push=push,
            expires_at=timezone.now() + timedelta(days=30),
        )
        with django_capture_on_commit_callbacks(execute=True):
            workspace_ref_archived.send(
                sender=ArchivedRef,
                repository_id=scene.repo.pk,
                ref="refs/users/alice/feature",
                sha=head,
                push_id=push.pk,
                reason=f"squashed into {branch}",
            )
        proposal.refresh_from_db()

    archived("release")  # landed elsewhere than the proposal's target: still open
    assert proposal.state == ProposalState.OPEN
    archived("main")
    assert (proposal.state, proposal.merge_push, proposal.merged_by, proposal.merged_sha) == (
        ProposalState.MERGED,
        push,
        scene.maint,
        squashed,
    )
