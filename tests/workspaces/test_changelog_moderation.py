"""The workspaces' changes in the replication log (repos.changelog): a take-down (its own kind,
which replicas must confirm), lifting it or restoring the workspace (moderation), a purge
(written with the refs' deletion, before the objects are pruned), merged-ref cleanup, restores
and expiry of archived refs, web merges and web edits. Freezing and hiding move no ref and
append nothing; a refused or rolled-back action appends nothing. Real git, in process."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from repos.errors import Conflict
from repos.models import Push, RepositoryChange
from reviews import merge
from reviews import services as review_services
from tests.factories import UserFactory
from tests.repos.changelog_support import no_change, one_change
from tests.reviews.conftest import Scene
from workspaces import cleanup, moderation
from workspaces.models import ArchivedRef
from workspaces.stale import stale_refs_archive

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(tmp_path, git_home) -> Scene:
    scene = Scene(tmp_path, git_home)
    scene.staff = UserFactory(username="staff", is_staff=True)
    scene.checkout("feature", "main")
    scene.feature = scene.commit("alice's work", {"w.txt": "w\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.publish("feature", "refs/users/alice/copy")
    scene.checkout("main")
    return scene


def act(scene, action, **kwargs):
    return getattr(moderation, action)(
        repo=scene.repo, user=scene.alice, acting_user=kwargs.pop("by", scene.staff), reason="r", **kwargs
    )


def test_freeze_and_hide_append_nothing(scene):
    with no_change(scene.repo.pk):
        act(scene, "do_freeze_workspace")
        act(scene, "do_hide_workspace")
        act(scene, "do_unhide_workspace")
    with no_change(scene.repo.pk), pytest.raises(Conflict):
        act(scene, "do_unhide_workspace")  # already visible


def test_take_down_lift_and_restore(scene):
    repo = scene.repo
    with one_change(repo.pk, "takedown", actor=scene.staff, push=False) as got:
        act(scene, "do_take_down_workspace")
    assert got.row.needs_confirmation and got.row.completed_at is None
    assert got.row.summary == "2 ref(s) of alice's workspace moved out of reach by a take-down"
    with one_change(repo.pk, "moderation", actor=scene.staff) as got:
        act(scene, "do_lift_take_down")
    assert got.row.summary == "2 ref(s) of alice's workspace moved back after its take-down"
    assert not got.row.needs_confirmation
    act(scene, "do_take_down_workspace")
    act(scene, "do_freeze_workspace")
    with one_change(repo.pk, "moderation", actor=scene.staff):
        act(scene, "do_restore_workspace")
    with no_change(repo.pk):  # nothing to move back: the flags only
        act(scene, "do_freeze_workspace")
        act(scene, "do_restore_workspace")


def test_a_failed_take_down_appends_nothing(scene):
    def broken(**_kwargs):
        raise RuntimeError("boom")

    moderation.workspace_taken_down.connect(broken, dispatch_uid="test-changelog-broken")
    try:
        with no_change(scene.repo.pk), pytest.raises(RuntimeError):
            act(scene, "do_take_down_workspace")
    finally:
        moderation.workspace_taken_down.disconnect(dispatch_uid="test-changelog-broken")
    # A moderator who is not staff may not take down: refused before anything.
    with no_change(scene.repo.pk), pytest.raises(Exception, match="staff"):
        act(scene, "do_take_down_workspace", by=scene.owner)


def test_purge_is_logged_with_what_it_purged(scene):
    act(scene, "do_take_down_workspace")
    with one_change(scene.repo.pk, "purge", actor=scene.staff) as got:
        act(scene, "do_purge_workspace")
    assert got.row.needs_confirmation
    assert got.row.summary.startswith("purged alice's refs (0 workspace, 2 taken-down, 0 archived)")
    with one_change(scene.repo.pk, "purge"):  # nothing left: the prune still runs everywhere
        act(scene, "do_purge_workspace")


def test_cleanup_restore_and_expiry(scene):
    repo = scene.repo
    scene.publish("main", "refs/users/alice/stale")
    with one_change(repo.pk, "cleanup", actor=scene.alice) as got:
        (row,) = stale_refs_archive(repo=repo, user=scene.alice, refs=["refs/users/alice/stale"])
    assert got.row.summary.startswith("archived 1 workspace ref(s) already on main, cleaned up by alice")
    with one_change(repo.pk, "restore", actor=scene.alice) as got:
        assert cleanup.restore(row, user=scene.alice) == "refs/users/alice/stale"
    assert got.row.summary == f"restored refs/users/alice/stale from {row.archive_ref}"
    row.refresh_from_db()
    with no_change(repo.pk), pytest.raises(Conflict):
        cleanup.restore(row, user=scene.alice)  # restored already

    (row,) = stale_refs_archive(repo=repo, user=scene.alice, refs=["refs/users/alice/stale"])
    ArchivedRef.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with one_change(repo.pk, "cleanup") as got:
        assert cleanup.expire_due() == 1
    assert got.row.summary == f"expired {row.archive_ref} (archived refs/users/alice/stale)"
    with no_change(repo.pk):
        assert cleanup.expire_due() == 0


def test_a_web_merge_is_a_web_change_with_its_push(scene):
    proposal = review_services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/feature",
        target_branch="main",
        title="t",
    )
    with one_change(scene.repo.pk, "web", actor=scene.maint, push=True) as got:
        result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="squash")
    assert got.row.push_id == result.push_id
    assert Push.objects.get(pk=result.push_id).protocol == "web"
    assert RepositoryChange.objects.filter(push_id=result.push_id).count() == 1
