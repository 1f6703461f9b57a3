"""Merge rules on branch protection: required approvals (current revision, never the author's),
code owners' approvals and required checks block a merge and then allow it, in the service,
over the API and on the page."""

from __future__ import annotations

import pytest
from django.test import Client

from repos import services as repo_services
from repos.errors import InvalidInput
from repos.models import CommitStatus, Role
from repos.pushes import Update, push_record
from reviews import merge, rules, services
from reviews.models import Approval, ProposalState
from tests.factories import UserFactory
from workspaces import services as ws_services

pytestmark = pytest.mark.django_db
API = "/api/v1/repos/owner/project/proposals/1"


def propose(scene, files=None):
    scene.checkout("feature", "main")
    scene.commit("feature", files or {"b.txt": "b\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="Add b",
    )


def new_revision(scene, proposal, files):
    scene.checkout("feature")
    scene.commit("more", files)
    old = scene.tip("refs/users/alice/feature")
    head = scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    push = push_record(
        repo=scene.repo, pusher=scene.alice, updates=[Update(old, head, "refs/users/alice/feature")]
    )
    return services.revision_record(proposal=proposal, head=head, push=push)


def status(scene, sha, context, state):
    CommitStatus.objects.update_or_create(
        repository=scene.repo, sha=sha, context=context, defaults={"state": state}
    )


def client_for(user) -> Client:
    secret = repo_services.token_create(user=user, scope="write")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_no_protection_asks_nothing(scene):
    assert rules.evaluate(propose(scene)).ok


def test_approvals_count_on_the_current_revision_only(scene):
    ws_services.protected_branch_set(repo=scene.repo, name="main", required_approvals=2)
    second = UserFactory(username="second")
    repo_services.membership_set(repo=scene.repo, user=second, role=Role.MAINTAINER)
    proposal = propose(scene)
    verdict = rules.evaluate(proposal)
    assert [m.code for m in verdict.missing] == ["approvals"] and "2 more approvals" in verdict.missing[
        0
    ].message
    services.proposal_approve(proposal=proposal, user=scene.maint)
    # The author's own approval never counts (a row written behind the service's back).
    Approval.objects.create(proposal=proposal, user=scene.alice, head_sha=proposal.revisions.get().head_sha)
    assert rules.evaluate(proposal).approvals == 1
    services.proposal_approve(proposal=proposal, user=second)
    assert rules.evaluate(proposal).ok
    new_revision(scene, proposal, {"c.txt": "c\n"})  # both approvals turn stale
    verdict = rules.evaluate(proposal)
    assert verdict.approvals == 0 and not verdict.ok
    with pytest.raises(merge.RulesNotMet) as refused:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    assert refused.value.status == 409 and "approvals" in refused.value.fields
    assert proposal.state == ProposalState.OPEN


def test_code_owners_must_approve_their_files(scene):
    scene.commit("owners", {"CODEOWNERS": "*.txt @maint\ndocs/ @owner\n"})
    scene.publish("main")
    ws_services.protected_branch_set(repo=scene.repo, name="main", require_code_owners=True)
    proposal = propose(scene, {"b.txt": "b\n", "docs/x.md": "x\n", "free.c": "c\n"})
    verdict = rules.evaluate(proposal)
    assert verdict.owners_missing == {"b.txt": ("maint",), "docs/x.md": ("owner",)}
    services.proposal_approve(proposal=proposal, user=scene.maint)
    assert rules.evaluate(proposal).owners_missing == {"docs/x.md": ("owner",)}
    services.proposal_approve(proposal=proposal, user=scene.owner)
    assert rules.evaluate(proposal).ok


def test_required_checks_and_tag_patterns_refuse_bad_names_and_too_many(scene):
    def refused(field, **kwargs):
        setter = (
            ws_services.protected_branch_set
            if field == "required_checks"
            else ws_services.workspace_settings_update
        )
        target = {"name": "main"} if field == "required_checks" else {}
        with pytest.raises(InvalidInput) as caught:
            setter(repo=scene.repo, **target, **kwargs)
        return caught.value.fields[field]

    assert refused("required_checks", required_checks="ci\x00x") == ["invalid"]
    assert refused("required_checks", required_checks="x" * 300) == ["invalid"]
    assert refused("required_checks", required_checks=",".join(f"c{n}" for n in range(51))) == ["too_many"]
    assert refused("protected_tags", protected_tags="v 1") == ["invalid"]
    assert refused("protected_tags", protected_tags=[f"v{n}" for n in range(101)]) == ["too_many"]
    # Blank lines, spaces around, duplicates and refs/tags/ are tidied, not refused.
    ws = ws_services.workspace_settings_update(repo=scene.repo, protected_tags=" refs/tags/v*\n\nv*\nrc-?")
    assert ws.protected_tags == "v*\nrc-?"
    branch = ws_services.protected_branch_set(repo=scene.repo, name="main", required_checks="ci, ci\n lint ,")
    assert branch.required_checks == ["ci", "lint"]


def test_required_checks(scene):
    ws_services.protected_branch_set(repo=scene.repo, name="main", required_checks="ci/tests, lint\n")
    proposal = propose(scene)
    head = proposal.revisions.get().head_sha
    verdict = rules.evaluate(proposal)
    assert verdict.checks == {"ci/tests": "", "lint": ""} and verdict.pending == ["ci/tests", "lint"]
    status(scene, head, "ci/tests", "failure")
    status(scene, head, "lint", "success")
    status(scene, "0" * 40, "ci/tests", "success")  # another commit's status is no help
    verdict = rules.evaluate(proposal)
    assert verdict.failing == ["ci/tests"] and [m.code for m in verdict.missing] == ["checks_failing"]
    status(scene, head, "ci/tests", "success")
    assert rules.evaluate(proposal).ok


def test_required_approvals_and_checks_block_then_allow_over_the_api(scene):
    admin = client_for(scene.owner)
    response = admin.put(
        "/api/v1/repos/owner/project/protected-branches/main",
        {"required_approvals": 1, "required_checks": ["ci"], "require_code_owners": False},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["required_approvals"] == 1 and response.json()["required_checks"] == ["ci"]
    bad = admin.put(
        "/api/v1/repos/owner/project/protected-branches/main",
        {"required_approvals": 99},
        content_type="application/json",
    )
    assert bad.status_code == 400
    proposal = propose(scene)
    maint = client_for(scene.maint)
    refused = maint.post(f"{API}/merge", {"strategy": "merge"}, content_type="application/json")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "rules_not_met" and set(error["fields"]) == {"approvals", "checks_pending"}
    mergeability = Client().get(f"{API}/mergeability").json()
    assert mergeability["rules_met"] is False and "approvals" in mergeability["missing"]
    assert maint.post(f"{API}/approvals").status_code == 201
    status(scene, proposal.revisions.get().head_sha, "ci", "error")
    refused = maint.post(f"{API}/merge", {"strategy": "merge"}, content_type="application/json")
    assert refused.status_code == 409 and set(refused.json()["error"]["fields"]) == {"checks_failing"}
    status(scene, proposal.revisions.get().head_sha, "ci", "success")
    merged = maint.post(f"{API}/merge", {"strategy": "merge"}, content_type="application/json")
    assert merged.status_code == 200, merged.content
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED


def test_required_approvals_and_checks_block_then_allow_on_the_page(scene):
    admin = Client()
    admin.force_login(scene.owner)
    response = admin.post(
        "/owner/project/settings/workspaces",
        {"action": "protect", "branch": "main", "required_approvals": "1", "required_checks": "ci\r\nlint"},
        follow=True,
    )
    settings_page = response.content.decode()
    assert "Branch protection saved." in settings_page and "1 approval" in settings_page
    # The row's edit form holds the rules as saved, so saving it again changes nothing.
    assert 'value="1"></label>' in settings_page and ">ci\nlint</textarea>" in settings_page
    admin.post(
        "/owner/project/settings/workspaces",
        {"action": "protect", "branch": "main", "required_approvals": "1", "required_checks": "ci"},
    )
    proposal = propose(scene)
    maint = Client()
    maint.force_login(scene.maint)
    page = maint.get("/owner/project/proposals/1").content.decode()
    assert "0 of 1 required approval on revision 1." in page and "<code>ci</code>: not reported yet" in page
    url = "/owner/project/proposals/1/merge"
    head = proposal.revisions.get().head_sha
    refused = maint.post(url, {"strategy": "merge", "head": head}, follow=True).content.decode()
    assert "Not merged: The branch&#x27;s merge rules are not met" in refused
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN
    maint.post("/owner/project/proposals/1/approve")
    status(scene, head, "ci", "success")
    page = maint.get("/owner/project/proposals/1").content.decode()
    assert "1 of 1 required approval" in page and "<code>ci</code>: success" in page
    merged = maint.post(url, {"strategy": "merge", "head": head}, follow=True).content.decode()
    assert "Merged into main" in merged
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED
