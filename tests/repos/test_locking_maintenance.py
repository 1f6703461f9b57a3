"""Maintenance on repos.locking: one run per repository, a killed run's lock gone with it, and
its record (maintenance_claimed_at) keeping the scheduler away only while it may still run."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from django.utils import timezone

from gitcore.git import GitError
from repos import locking
from repos.maintenance import maintain_repository, repositories_due_for_maintenance
from repos.models import Repository
from tests.factories import RepositoryFactory
from tests.repos.test_locking import holding, process_env
from tests.support.wait import wait_until

pytestmark = pytest.mark.django_db


def due() -> set[int]:
    return set(repositories_due_for_maintenance().values_list("pk", flat=True))


def test_a_killed_run_is_taken_over_and_rescheduled_after_its_record_expires(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    repo = RepositoryFactory()
    assert repo.pk in due()  # never maintained
    code = f"from repos import locking\nheld = locking.claim('maintenance', {repo.pk})\nassert held"
    with holding(process_env(tmp_path), code):
        Repository.objects.filter(pk=repo.pk).update(maintenance_claimed_at=timezone.now())
        result = maintain_repository(repo)
        assert not result.ran and result.reason == "another maintenance run holds this repository"
        assert repo.pk not in due()
    # Killed mid-run: its record stays until MAINTENANCE_STALE_CLAIM, its lock went with it.
    assert repo.pk not in due()
    stale = timezone.now() - settings.MAINTENANCE_STALE_CLAIM - timedelta(minutes=1)
    Repository.objects.filter(pk=repo.pk).update(maintenance_claimed_at=stale)
    assert repo.pk in due()
    # A killed holder's PostgreSQL session ends a moment after it.
    wait_until(
        lambda: not locking.is_claimed("maintenance", repo.pk), timeout=10, what="the killed run's lock to go"
    )
    assert maintain_repository(repo).ran
    repo.refresh_from_db()
    assert repo.maintenance_claimed_at is None and repo.last_maintained_at is not None
    assert not locking.is_claimed("maintenance", repo.pk)


def test_a_failed_run_releases_its_claim_and_clears_its_record(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    repo = RepositoryFactory()
    shutil.rmtree(repo.disk_path)
    with pytest.raises(GitError):
        maintain_repository(repo)
    repo.refresh_from_db()
    assert repo.maintenance_claimed_at is None
    assert not locking.is_claimed("maintenance", repo.pk)
