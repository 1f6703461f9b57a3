"""Moderation flags compose, and every way of writing to a workspace checks them: real pushes
to the live server, the web pages and the API (over HTTP to the live server where a token is
what a user would send), proposals and archived refs. Take-downs: test_moderation_takedown.py."""

from __future__ import annotations

import pytest

from repos.errors import Conflict, Forbidden
from repos.models import AuditEntry, Push
from reviews import services as review_services
from reviews.models import Proposal
from tests.factories import RepositoryFactory, UserFactory
from tests.workspaces import moderation_support
from tests.workspaces.moderation_support import NONE, audit, call, flags, signed_in, ws
from workspaces import cleanup, moderation
from workspaces import services as workspace_services
from workspaces.models import ArchivedRef, Workspace

scene = moderation_support.scene  # the fixture


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
