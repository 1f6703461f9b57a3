"""Every change of a repository appends one row to the replication log (repos.changelog), in the
transaction that records it: creation, pushes of each protocol, a new default branch, renames
and transfers, soft delete and undelete, the purge (whose rows outlive the repository),
maintenance, reconciliation, mirror syncs, imports and ref removals. A failed or rolled-back
action appends nothing and leaves the generation as it was. Real git, real database."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from gitcore.git import GitError, run_git
from repos import changelog, lifecycle, maintenance, pushes, reconcile, refs_admin, services
from repos.errors import Conflict, Forbidden
from repos.hooks.updates import Update
from repos.models import Push, Repository, RepositoryChange, Role
from repos.signals import repository_changed
from sources import importing, mirrors
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import make_history
from tests.repos.changelog_support import last_generation, no_change, one_change, row_generation
from tests.repos.refs_admin_scene import ZERO, commit, put_refs

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return UserFactory(username="olga")


@pytest.fixture
def repo(owner):
    return RepositoryFactory(owner=owner, name="proj")


def pushed(repo, user, protocol="http", ref="refs/heads/main"):
    """A commit put on `ref` on disk, then recorded as git's post-receive would have it."""
    path = repo.disk_path
    old = run_git(["rev-parse", "--verify", "--quiet", ref], repo=path, check=False).text.strip() or ZERO
    new = commit(path, f"work {time.time_ns()}", None if old == ZERO else old)
    put_refs(repo, {ref: new})
    return pushes.push_record(repo=repo, pusher=user, updates=[Update(old, new, ref)], protocol=protocol)


def test_creation_is_the_first_change(owner, django_capture_on_commit_callbacks):
    sent = []

    def receiver(**kwargs):
        sent.append(kwargs)

    repository_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            repo = RepositoryFactory(owner=owner, name="fresh")
    finally:
        repository_changed.disconnect(receiver)
    (row,) = RepositoryChange.objects.filter(repository_id=repo.pk)
    assert (row.kind, row.generation, row.actor, row.push) == ("create", 1, owner, None)
    assert row.summary == "created olga/fresh" and not row.needs_confirmation
    assert repo.generation == row_generation(repo.pk) == changelog.current_generation(repo.pk) == 1
    assert [(s["change_id"], s["generation"], s["kind"], s["actor_id"]) for s in sent] == [
        (row.pk, 1, "create", owner.pk)
    ]


def test_a_failed_creation_appends_nothing(owner):
    def populate(path):
        raise RuntimeError("the disk is full")

    count = RepositoryChange.objects.count()
    with pytest.raises(RuntimeError):
        RepositoryFactory(owner=owner, name="broken", populate=populate)
    assert RepositoryChange.objects.count() == count
    assert not Repository.objects.filter(name="broken").exists()


@pytest.mark.parametrize(
    ("protocol", "kind"),
    [("http", "push"), ("ssh", "push"), ("web", "web"), ("api", "web"), ("mirror", "mirror")],
)
def test_a_push_is_one_change_of_its_protocols_kind(repo, owner, protocol, kind):
    with one_change(repo.pk, kind, actor=owner, push=True) as got:
        push = pushed(repo, owner, protocol)
    assert got.row.push_id == push.pk and got.row.summary == "refs/heads/main"


def test_a_rolled_back_push_appends_nothing(repo, owner):
    with no_change(repo.pk), pytest.raises(RuntimeError), transaction.atomic():
        pushed(repo, owner)
        raise RuntimeError("the request failed after recording")
    assert not Push.objects.filter(repository=repo).exists()


def test_a_stale_instance_saved_keeps_the_generation(repo, owner):
    stale = Repository.objects.get(pk=repo.pk)
    pushed(repo, owner)
    stale.description = "saved with the generation it was read with"
    stale.save()  # a full save: every field but the generation
    assert row_generation(repo.pk) == last_generation(repo.pk) == 2
    assert Repository.objects.get(pk=repo.pk).description == stale.description
    with one_change(repo.pk, "push"):
        pushed(repo, owner)
    assert row_generation(repo.pk) == last_generation(repo.pk) == 3


def test_a_new_default_branch_moves_head_as_a_web_change(repo, owner):
    put_refs(repo, {"refs/heads/develop": commit(repo.disk_path, "d")})
    with one_change(repo.pk, "web", actor=owner, push=False) as got:
        updated = services.repository_update(repo=repo, default_branch="develop", actor=owner)
    assert got.row.summary == "default branch set to develop"
    assert updated.generation == got.row.generation
    with no_change(repo.pk):  # settings that move no ref
        services.repository_update(repo=repo, description="words", default_branch="develop")


def test_rename_and_transfer(repo, owner):
    staff = UserFactory(username="staffer", is_staff=True)
    with one_change(repo.pk, "rename", actor=owner) as got:
        lifecycle.repository_move(repo=repo, acting_user=owner, new_name="renamed")
    assert got.row.summary == "renamed olga/proj to olga/renamed"
    with one_change(repo.pk, "rename", actor=staff) as got:
        lifecycle.repository_move(repo=repo, acting_user=staff, new_owner=staff)
    assert got.row.summary == "transferred olga/renamed to staffer/renamed"
    RepositoryFactory(owner=staff, name="taken")
    with no_change(repo.pk), pytest.raises(Conflict):
        lifecycle.repository_move(repo=repo, acting_user=staff, new_name="taken")


def test_soft_delete_and_undelete(repo, owner):
    staff = UserFactory(username="staffer", is_staff=True)
    with no_change(repo.pk), pytest.raises(RuntimeError), transaction.atomic():
        lifecycle.repository_soft_delete(repo=repo, acting_user=owner)
        raise RuntimeError("rolled back")
    repo.refresh_from_db()
    with one_change(repo.pk, "delete", actor=owner):
        lifecycle.repository_soft_delete(repo=repo, acting_user=owner)
    with no_change(repo.pk), pytest.raises(Forbidden):
        lifecycle.repository_restore(repo=repo, acting_user=owner)
    with one_change(repo.pk, "undelete", actor=staff):
        lifecycle.repository_restore(repo=repo, acting_user=staff)


def test_a_purged_repositorys_log_outlives_it(repo, owner):
    push = pushed(repo, owner)
    lifecycle.repository_soft_delete(repo=repo, acting_user=owner)
    Repository.objects.filter(pk=repo.pk).update(deleted_at=timezone.now() - timedelta(days=365))
    repo_id, before = repo.pk, last_generation(repo.pk)
    with one_change(repo_id, "purge_repository") as got:
        assert lifecycle.repository_purge(repo_id=repo_id)
    assert not Repository.objects.filter(pk=repo_id).exists()
    rows = list(RepositoryChange.objects.filter(repository_id=repo_id).order_by("generation"))
    assert [r.kind for r in rows] == ["create", "push", "delete", "purge_repository"]
    assert [r.generation for r in rows] == [1, 2, 3, 4] and before == 3
    assert got.row.needs_confirmation and got.row.summary == "purged olga/proj for good"
    # The push went with the repository; its row stays, no longer pointing at it.
    assert not Push.objects.filter(pk=push.pk).exists() and rows[1].push_id is None


def test_maintenance_is_a_change_after_its_repack(repo, owner):
    pushed(repo, owner)
    with one_change(repo.pk, "maintenance") as got:
        assert maintenance.maintain_repository(repo).ran
    assert got.row.summary.startswith("repacked") and got.row.actor is None
    with one_change(repo.pk, "maintenance") as got:
        maintenance.repack_fresh(repo)
    assert got.row.summary == "repacked with a fresh delta search"
    run_git(["config", "core.bare", "maybe"], repo=repo.disk_path)  # every git command now fails
    with no_change(repo.pk), pytest.raises(GitError):
        maintenance.maintain_repository(repo)


def test_reconciliation_is_its_own_kind(repo, owner):
    pushed(repo, owner)
    put_refs(repo, {"refs/heads/main": commit(repo.disk_path, "behind the platform's back")})
    with one_change(repo.pk, "reconcile", push=True) as got:
        assert reconcile.reconcile_repository(repo, settle=0).outcome == "recorded"
    assert Push.objects.get(pk=got.row.push_id).protocol == "recovered"
    with no_change(repo.pk):
        assert reconcile.reconcile_repository(repo, settle=0).outcome == "in step"


def test_mirror_syncs_and_a_sync_that_changes_nothing(repo, owner, tmp_path, git_home):
    staff = UserFactory(username="staffer", is_staff=True)
    services.membership_set(repo=repo, user=staff, role=Role.ADMIN)
    source = tmp_path / "upstream"
    make_history(source, git_home)
    mirror = mirrors.mirror_create(repo=repo, url=str(source), created_by=staff)
    before = last_generation(repo.pk)
    assert mirrors.sync_mirror(mirror).outcome == "synced"
    rows = list(RepositoryChange.objects.filter(repository_id=repo.pk, generation__gt=before))
    # The refs, then HEAD following the upstream's (main did not exist here): two changes.
    assert [(r.kind, r.generation, r.push_id is not None) for r in rows] == [
        ("mirror", before + 1, True),
        ("mirror", before + 2, False),
    ]
    assert rows[1].summary == "default branch set to trunk"
    with no_change(repo.pk):
        assert mirrors.sync_mirror(mirror).outcome == "unchanged"


def test_an_import_creates_then_imports(owner, tmp_path, git_home):
    source = tmp_path / "upstream"
    make_history(source, git_home)
    repo = importing.import_now(owner=owner, name="imported", source=str(source)).repository
    rows = list(RepositoryChange.objects.filter(repository_id=repo.pk).order_by("generation"))
    assert [(r.kind, r.generation, r.actor_id) for r in rows] == [
        ("create", 1, owner.pk),
        ("import", 2, owner.pk),
    ]
    assert rows[1].push.protocol == "import" and row_generation(repo.pk) == 2


def test_a_ref_removed_by_an_admin_is_a_web_change(repo, owner):
    pushed(repo, owner, ref="refs/heads/old")
    with one_change(repo.pk, "web", actor=owner, push=True):
        refs_admin.ref_remove(repo=repo, refs=["refs/heads/old"], actor=owner, via="web")
    pushed(repo, owner, ref="refs/heads/other")
    with no_change(repo.pk), pytest.raises(Conflict):
        refs_admin.ref_remove(
            repo=repo,
            refs=["refs/heads/other"],
            actor=owner,
            via="api",
            expected={"refs/heads/other": "1" * 40},
        )
