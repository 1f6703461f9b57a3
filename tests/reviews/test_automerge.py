"""Merge when ready: turned on by a maintainer, the proposal merges as them once the rules are
met and git merges it cleanly; a push by someone else turns it off; so does losing the right."""

from __future__ import annotations

import pytest
from django.test import Client

from repos import services as repo_services
from repos.models import CommitStatus, Role
from repos.pushes import Update, push_record
from repos.signals import commit_status_changed
from reviews import automerge, services, tasks
from reviews.models import ProposalState
from workspaces import services as ws_services

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(scene):
    ws_services.protected_branch_set(repo=scene.repo, name="main", required_checks=["ci"])
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


def report(scene, sha, state):
    CommitStatus.objects.update_or_create(
        repository=scene.repo, sha=sha, context="ci", defaults={"state": state}
    )
    commit_status_changed.send(
        sender=CommitStatus,
        repository_id=scene.repo.pk,
        sha=sha,
        context="ci",
        state=state,
        previous_state="",
    )


def test_merges_as_the_maintainer_once_the_check_passes(
    scene, proposal, enqueued, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(scene.maint)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(
            "/owner/project/proposals/1/auto-merge", {"action": "enable", "strategy": "squash"}, follow=True
        ).content.decode()
    assert 'id="auto-merge-on"' in page and "squash, as maint" in page
    assert ("reviews.tasks.auto_merge", (proposal.pk,)) in enqueued
    assert tasks.auto_merge(proposal.pk) == "waiting"  # ci not reported
    head = proposal.revisions.get().head_sha
    with django_capture_on_commit_callbacks(execute=True):
        report(scene, head, "pending")
    assert ("reviews.tasks.follow_status", (scene.repo.pk, head, "ci", "pending")) in enqueued
    assert tasks.follow_status(scene.repo.pk, head, "ci", "pending") == "1 proposals"
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN
    report(scene, head, "success")
    tasks.follow_status(scene.repo.pk, head, "ci", "success")
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED and proposal.merged_by == scene.maint
    assert proposal.merge_strategy == "squash"


def test_a_failing_check_tells_the_author(scene, proposal, monkeypatch):
    told = []
    monkeypatch.setattr(
        "reviews.events.check_failed",
        lambda p, *, context, state, target_url="": told.append((p.pk, context, state)),
    )
    head = proposal.revisions.get().head_sha
    tasks.follow_status(scene.repo.pk, head, "ci", "failure")
    tasks.follow_status(scene.repo.pk, "f" * 40, "ci", "failure")  # not a proposal's head
    assert told == [(proposal.pk, "ci", "failure")]


def test_a_push_by_someone_else_turns_it_off(scene, proposal):
    automerge.auto_merge_enable(proposal=proposal, user=scene.maint, strategy="merge")
    scene.checkout("feature")
    old = scene.tip("refs/users/alice/feature")
    scene.commit("more", {"c.txt": "c\n"})
    head = scene.publish("feature", "refs/users/alice/feature")
    push = push_record(
        repo=scene.repo, pusher=scene.alice, updates=[Update(old, head, "refs/users/alice/feature")]
    )
    services.revision_record(proposal=proposal, head=head, push=push)
    proposal.refresh_from_db()
    assert proposal.auto_merge_strategy == "" and proposal.auto_merge_by is None


def test_the_enablers_own_push_keeps_it(scene, proposal):
    automerge.auto_merge_enable(proposal=proposal, user=scene.maint, strategy="merge")
    scene.checkout("feature")
    old = scene.tip("refs/users/alice/feature")
    scene.commit("fixup by the maintainer", {"c.txt": "c\n"})
    head = scene.publish("feature", "refs/users/alice/feature")
    push = push_record(
        repo=scene.repo, pusher=scene.maint, updates=[Update(old, head, "refs/users/alice/feature")]
    )
    services.revision_record(proposal=proposal, head=head, push=push)
    proposal.refresh_from_db()
    assert proposal.auto_merge_strategy == "merge"


def test_losing_the_right_turns_it_off_and_readers_cannot_turn_it_on(scene, proposal):
    with pytest.raises(Exception, match="maintainers and admins may merge"):
        automerge.auto_merge_enable(proposal=proposal, user=scene.bob, strategy="merge")
    automerge.auto_merge_enable(proposal=proposal, user=scene.maint, strategy="merge")
    repo_services.membership_set(repo=scene.repo, user=scene.maint, role=Role.READER)
    report(scene, proposal.revisions.get().head_sha, "success")
    assert tasks.auto_merge(proposal.pk) == "cancelled"
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN and proposal.auto_merge_strategy == ""


def test_the_api_turns_it_on_and_off(scene, proposal):
    secret = repo_services.token_create(user=scene.maint, scope="write")[1]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    url = "/api/v1/repos/owner/project/proposals/1/auto-merge"
    on = api.put(url, {"strategy": "rebase"}, content_type="application/json")
    assert on.status_code == 200 and on.json()["auto_merge"] == "rebase"
    assert api.put(url, {"strategy": "octopus"}, content_type="application/json").status_code == 400
    assert api.delete(url).status_code == 204
    proposal.refresh_from_db()
    assert proposal.auto_merge_strategy == ""
