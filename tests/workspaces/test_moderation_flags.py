"""Moderation flags compose, and every way of writing to a workspace checks them: real pushes
to the live server, the web pages and the API (over HTTP to the live server where a token is
what a user would send), proposals, exports; a take-down closes the workspace's proposals."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from django.test import Client

from repos import lifecycle
from repos.errors import Conflict, Forbidden
from repos.models import AuditEntry, Push
from reviews import services as review_services
from reviews.models import Proposal
from reviews.templatetags.proposal_moderation import may_read_moderation_note
from tests.factories import RepositoryFactory, UserFactory
from workspaces import cleanup, exports, moderation
from workspaces import services as workspace_services
from workspaces.models import ArchivedRef, Workspace, WorkspaceExport

NONE = {"frozen": False, "hidden": False, "taken_down": False}


def flags(**set_) -> dict[str, bool]:
    return {**NONE, **set_}


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def call(world, pusher, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """The API over HTTP on the live server, with the pusher's token."""
    request = urllib.request.Request(
        f"http://{world.host}{path}",
        method=method,
        data=json.dumps(body or {}).encode(),
        headers={"Authorization": f"Bearer {pusher.token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def audit(world) -> list[tuple[str, dict, dict]]:
    rows = AuditEntry.objects.filter(repository=world.repo).order_by("pk")
    return [
        (
            e.action,
            {k: v for k, v in e.before.items() if k in NONE},
            {k: v for k, v in e.after.items() if k in NONE},
        )
        for e in rows
    ]


@pytest.fixture
def scene(world):
    alice = world.add("alice")
    world.feature = alice.commit("alice's work", name="alice.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    world.alice = alice
    world.staff = UserFactory(username="staff", is_staff=True)
    return world


def ws(world) -> Workspace:
    return Workspace.objects.get(repository=world.repo, user=world.alice.user)


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_hiding_a_frozen_workspace_keeps_it_frozen(scene):
    repo, alice, admin = scene.repo, scene.alice, scene.owner.user
    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=admin, reason="spam")
    moderation.do_hide_workspace(repo=repo, user=alice.user, acting_user=admin, reason="offensive names")
    assert ws(scene).flags == flags(frozen=True, hidden=True)
    alice.commit("more", name="alice.txt")
    result = alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode != 0 and "frozen by a moderator" in result.stderr
    assert scene.refs()["refs/users/alice/feature"] == scene.feature
    assert audit(scene) == [
        ("freeze", NONE, flags(frozen=True)),
        ("hide", flags(frozen=True), flags(frozen=True, hidden=True)),
    ]
    # The owner's page and the admin's moderation page show both flags together.
    page = signed_in(alice.user).get(f"/{repo.full_name}/workspaces/alice").content.decode()
    assert page.count('class="badge moderation-flag"') == 2 and ">frozen<" in page and ">hidden<" in page
    moderated = signed_in(admin).get(f"/{repo.full_name}/settings/moderation").content.decode()
    assert ">frozen<" in moderated and ">hidden<" in moderated
    # One flag at a time comes off; the other stays.
    with pytest.raises(Conflict):
        moderation.do_hide_workspace(repo=repo, user=alice.user, acting_user=admin, reason="again")
    moderation.do_unhide_workspace(repo=repo, user=alice.user, acting_user=admin, reason="renamed")
    assert ws(scene).flags == flags(frozen=True)
    assert alice.push("HEAD:refs/users/alice/feature").returncode != 0
    moderation.do_unfreeze_workspace(repo=repo, user=alice.user, acting_user=admin, reason="talked")
    result = alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode == 0, result.stderr
    assert [a for a, _b, _c in audit(scene)] == ["freeze", "hide", "unhide", "unfreeze"]


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_frozen_owner_cannot_restore_an_archived_ref(scene):
    repo, alice, owner = scene.repo, scene.alice, scene.owner
    # The work lands on main; cleanup archives alice's ref, as the task would after the push.
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/feature", check=True)
    owner.git("merge", "--ff-only", "--quiet", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    cleanup.cleanup_after_push(Push.objects.filter(repository=repo).latest("pk"))
    archived = ArchivedRef.objects.get(repository=repo, ref="refs/users/alice/feature")
    assert "refs/users/alice/feature" not in scene.refs()

    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=owner.user, reason="spam")
    web = signed_in(alice.user)
    response = web.post(f"/{repo.full_name}/archived/{archived.pk}/restore")
    assert response.status_code == 403 and "frozen by a moderator" in response.content.decode()
    path = f"/api/v1/repos/{repo.full_name}/workspaces/alice/archived/{archived.pk}/restore"
    status, body = call(scene, alice, "POST", path)
    assert status == 403 and "frozen by a moderator" in body["error"]["message"], body
    archived.refresh_from_db()
    assert archived.state == "archived" and "refs/users/alice/feature" not in scene.refs()
    # The page offers no restore button meanwhile, and says why.
    page = web.get(f"/{repo.full_name}/workspaces/alice").content.decode()
    assert "frozen by a moderator" in page and f"/archived/{archived.pk}/restore" not in page

    # A take-down refuses the repository's admin too; a deactivated account is refused outright.
    moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=scene.staff, reason="DMCA")
    status, body = call(scene, owner, "POST", path)
    assert status == 403 and "taken down" in body["error"]["message"], body
    moderation.do_restore_workspace(
        repo=repo, user=alice.user, acting_user=scene.staff, reason="counter-notice"
    )
    moderation.do_ban_from_site(user=alice.user, acting_user=scene.staff, reason="spam everywhere")
    alice.user.refresh_from_db()
    with pytest.raises(Forbidden, match="deactivated"):
        workspace_services.archived_ref_restore(archived=archived, user=alice.user)
    assert call(scene, alice, "POST", path)[0] in (401, 403)
    archived.refresh_from_db()
    assert archived.state == "archived"

    # Once the flags are gone, the owner restores it.
    moderation.do_unban_from_site(user=alice.user, acting_user=scene.staff, reason="appeal")
    status, body = call(scene, alice, "POST", path)
    assert (status, body) == (200, {"ref": "refs/users/alice/feature", "sha": scene.feature})


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_frozen_owner_cannot_open_or_update_proposals(scene):
    repo, alice, owner = scene.repo, scene.alice, scene.owner
    proposals = f"/api/v1/repos/{repo.full_name}/proposals"
    status, first = call(
        scene,
        alice,
        "POST",
        proposals,
        {"source_ref": "feature", "target_branch": "main", "title": "Feature"},
    )
    assert status == 201, first
    alice.commit("second piece", name="second.txt")
    assert alice.push("HEAD:refs/users/alice/second").returncode == 0

    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=owner.user, reason="spam")
    status, body = call(
        scene, alice, "POST", proposals, {"source_ref": "second", "target_branch": "main", "title": "Second"}
    )
    assert status == 403 and "frozen by a moderator" in body["error"]["message"], body
    response = signed_in(alice.user).post(
        f"/{repo.full_name}/proposals/new",
        {"source_ref": "refs/users/alice/second", "target_branch": "main", "title": "Second"},
    )
    assert "frozen by a moderator" in response.content.decode()
    status, body = call(scene, alice, "PATCH", f"{proposals}/1", {"title": "Renamed while frozen"})
    assert status == 403 and "frozen" in body["error"]["message"], body
    # A nameless push with a title is refused before any proposal is made of it.
    result = alice.push("HEAD:refs/for/main", options=["title=Sneaky"])
    assert result.returncode != 0 and "frozen" in result.stdout + result.stderr
    assert list(Proposal.objects.values_list("number", "title", "state")) == [(1, "Feature", "open")]
    # The repository's maintainers still may close it; reopening is the owner's write again.
    review_services.proposal_close(proposal=Proposal.objects.get(), user=owner.user)
    with pytest.raises(Forbidden):
        review_services.proposal_reopen(proposal=Proposal.objects.get(), user=alice.user)


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
    assert "refs/users/alice/feature" in scene.refs() and ws(scene).flags == NONE
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


def call_raw(world, pusher, path: str) -> int:
    request = urllib.request.Request(
        f"http://{world.host}{path}", headers={"Authorization": f"Bearer {pusher.token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.django_db
def test_unban_lifts_only_the_freeze_the_ban_made():
    owner, alice, bob = (
        UserFactory(username="owner"),
        UserFactory(username="alice"),
        UserFactory(username="bob"),
    )
    repo = RepositoryFactory(owner=owner, name="project")
    # alice was active: the ban freezes her workspace and the unban lifts that freeze.
    moderation.do_ban_from_repository(repo=repo, user=alice, acting_user=owner, reason="abuse")
    row = Workspace.objects.get(repository=repo, user=alice)
    assert row.frozen and row.frozen_by_ban
    moderation.do_unban_from_repository(repo=repo, user=alice, acting_user=owner, reason="ok")
    assert Workspace.objects.get(repository=repo, user=alice).flags == NONE
    # bob was frozen by a moderator first: the unban leaves that freeze.
    moderation.do_freeze_workspace(repo=repo, user=bob, acting_user=owner, reason="spam")
    moderation.do_ban_from_repository(repo=repo, user=bob, acting_user=owner, reason="abuse")
    moderation.do_unban_from_repository(repo=repo, user=bob, acting_user=owner, reason="ok")
    assert Workspace.objects.get(repository=repo, user=bob).flags == flags(frozen=True)
    ban, unban = AuditEntry.objects.filter(target_user=bob, action__in=["ban", "unban"]).order_by("pk")
    assert ban.after == {"banned": True, **flags(frozen=True), "frozen_by_ban": False}
    assert unban.after == {"banned": False, **flags(frozen=True)}
    # A moderator's freeze over the ban's makes it the moderator's: the unban keeps it.
    moderation.do_ban_from_repository(repo=repo, user=alice, acting_user=owner, reason="again")
    moderation.do_freeze_workspace(repo=repo, user=alice, acting_user=owner, reason="and frozen")
    moderation.do_unban_from_repository(repo=repo, user=alice, acting_user=owner, reason="ok")
    assert Workspace.objects.get(repository=repo, user=alice).frozen


@pytest.mark.django_db
def test_queue_shows_the_flags_of_each_reported_workspace():
    from workspaces.models import Report

    owner, alice = UserFactory(username="owner"), UserFactory(username="alice")
    staff = UserFactory(username="staff", is_staff=True)
    repo = RepositoryFactory(owner=owner, name="project")
    Report.objects.create(repository=repo, target_user=alice, reporter=owner, reason="spam")
    Workspace.objects.create(repository=repo, user=alice, frozen=True, hidden=True)
    body = signed_in(staff).get("/moderation").content.decode()
    assert ">frozen<" in body and ">hidden<" in body and ">taken down<" not in body
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(staff)
    [report] = api.get("/api/v1/moderation/reports").json()["results"]
    assert report["workspace"] == flags(frozen=True, hidden=True)
