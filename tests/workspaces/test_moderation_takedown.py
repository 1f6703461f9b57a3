"""A take-down closes the workspace's open proposals with a note only moderators read, a
restore clears every flag, and a taken-down workspace is not exported, even to its owner."""

from __future__ import annotations

import json

import pytest

from repos import lifecycle
from repos.errors import Conflict, Forbidden
from repos.models import AuditEntry
from reviews import services as review_services
from reviews.models import Proposal
from reviews.templatetags.proposal_moderation import may_read_moderation_note
from tests.workspaces import moderation_support
from tests.workspaces.moderation_support import NONE, call, call_raw, flags, flags_of, signed_in, ws
from workspaces import exports, moderation
from workspaces.models import WorkspaceExport

scene = moderation_support.scene  # the fixture


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_take_down_closes_open_proposals_with_a_note(scene):
    repo, alice, staff = scene.repo, scene.alice, scene.staff
    bob = scene.add("bob")
    bob.commit("bob's work", name="bob.txt")
    assert bob.push("HEAD:refs/users/bob/idea").returncode == 0
    alice.commit("other", name="other.txt")
    assert alice.push("HEAD:refs/users/alice/other").returncode == 0
    for who, ref in ((alice, "feature"), (alice, "other"), (bob, "idea")):
        review_services.proposal_open(
            repo=repo, user=who.user, source_ref=ref, target_branch="main", title=ref
        )
    review_services.proposal_close(proposal=Proposal.objects.get(number=2), user=alice.user)

    # A receiver that fails rolls the whole take-down back: refs, flags, proposals, audit.
    def broken(**_kwargs):
        raise RuntimeError("boom")

    moderation.workspace_taken_down.connect(broken, dispatch_uid="test-broken")
    try:
        with pytest.raises(RuntimeError):
            moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=staff, reason="DMCA #7")
    finally:
        moderation.workspace_taken_down.disconnect(dispatch_uid="test-broken")
    assert "refs/users/alice/feature" in scene.refs() and flags_of(scene) == NONE
    assert Proposal.objects.get(number=1).state == "open" and not AuditEntry.objects.exists()

    entry = moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=staff, reason="DMCA #7")
    states = {p.number: (p.state, p.closed_reason) for p in Proposal.objects.all()}
    assert states == {1: ("closed", "moderation"), 2: ("closed", ""), 3: ("open", "")}
    closed = Proposal.objects.get(number=1)
    assert "taken down" in closed.moderation_note and "DMCA #7" in closed.moderation_note
    assert entry.after["proposals_closed"] == [1] and entry.after["taken_down"] is True
    assert entry.before == {
        **NONE,
        "refs": {
            "refs/users/alice/feature": scene.feature,
            "refs/users/alice/other": scene.refs()["refs/takedown/alice/other"],
        },
    }
    # The note: maintainers, admins and staff; not the author, nor anyone else.
    maud = scene.add("maud", "maintainer").user
    assert may_read_moderation_note(maud, closed) and may_read_moderation_note(scene.owner.user, closed)
    assert not may_read_moderation_note(alice.user, closed) and not may_read_moderation_note(bob.user, closed)
    page = f"/{repo.full_name}/proposals/1"
    assert "DMCA #7" in signed_in(staff).get(page).content.decode()
    for user in (alice.user, bob.user):
        assert "DMCA #7" not in signed_in(user).get(page).content.decode()
    assert "DMCA #7" not in json.dumps(
        call(scene, alice, "GET", f"/api/v1/repos/{repo.full_name}/proposals/1")[1]
    )
    # Nobody reopens it while the workspace is taken down (the pages may not even show it).
    for user in (scene.owner.user, alice.user):
        with pytest.raises(Forbidden, match="taken down"):
            review_services.proposal_reopen(proposal=Proposal.objects.get(number=1), user=user)

    # Lifting the take-down leaves the proposals closed; the author may reopen by hand.
    moderation.do_lift_take_down(repo=repo, user=alice.user, acting_user=staff, reason="counter-notice")
    assert Proposal.objects.get(number=1).state == "closed" and ws(scene).flags == NONE
    status, body = call(
        scene, alice, "PATCH", f"/api/v1/repos/{repo.full_name}/proposals/1", {"state": "open"}
    )
    assert status == 200 and body["state"] == "open", body
    assert Proposal.objects.get(number=1).closed_reason == ""


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_restore_clears_every_flag(scene):
    repo, alice, staff = scene.repo, scene.alice, scene.staff
    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=staff, reason="a")
    moderation.do_hide_workspace(repo=repo, user=alice.user, acting_user=staff, reason="b")
    moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=staff, reason="c")
    assert ws(scene).flags == flags(frozen=True, hidden=True, taken_down=True)
    # A repository admin may not lift a take-down, through "restore" either: nothing changes.
    with pytest.raises(Forbidden):
        moderation.do_restore_workspace(repo=repo, user=alice.user, acting_user=scene.owner.user, reason="x")
    assert ws(scene).flags == flags(frozen=True, hidden=True, taken_down=True)
    assert "refs/takedown/alice/feature" in scene.refs()
    # The staff API's "restore" keeps working: every flag off, the refs back.
    staff_pusher = scene._adopt(staff, "staff")
    status, body = call(
        scene,
        staff_pusher,
        "POST",
        "/api/v1/moderation/actions",
        {"action": "restore", "username": "alice", "repository": repo.full_name, "reason": "all clear"},
    )
    assert status == 201, body
    assert body["before"] == {
        **flags(frozen=True, hidden=True, taken_down=True),
        "refs": {"refs/takedown/alice/feature": scene.feature},
    }
    assert body["after"] == {**NONE, "refs": {"refs/users/alice/feature": scene.feature}}
    assert ws(scene).flags == NONE and scene.refs()["refs/users/alice/feature"] == scene.feature
    alice.commit("back to work", name="alice.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    with pytest.raises(Conflict):
        moderation.do_restore_workspace(repo=repo, user=alice.user, acting_user=staff, reason="again")


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_taken_down_workspace_is_not_exported_to_its_owner(scene):
    repo, alice, staff = scene.repo, scene.alice, scene.staff
    lifecycle.repository_soft_delete(repo=repo, acting_user=scene.owner.user)
    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=staff, reason="spam")
    # Frozen: the export is still the owner's to take.
    status, body = call(scene, alice, "POST", "/api/v1/user/workspace-exports", {"repository_id": repo.pk})
    assert status == 202, body
    export = exports.workspace_export_build(export=WorkspaceExport.objects.get(pk=body["id"]))
    assert export.state == "ready" and export.ref_count == 1
    download = f"/api/v1/user/workspace-exports/{export.pk}/download"
    assert call_raw(scene, alice, download) == 200

    moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=staff, reason="DMCA")
    assert call_raw(scene, alice, download) == 403
    response = signed_in(alice.user).get(f"/settings/workspace-exports/download/{export.pk}")
    assert response.status_code == 403 and "taken down" in response.content.decode()
    status, body = call(scene, alice, "POST", "/api/v1/user/workspace-exports", {"repository_id": repo.pk})
    assert status == 403 and "taken down" in body["error"]["message"], body
    # A request made before the take-down is not built after it.
    pending = WorkspaceExport.objects.create(repository=repo, user=alice.user)
    built = exports.workspace_export_build(export=pending)
    assert built.state == "failed" and "taken down" in built.error and not built.path
