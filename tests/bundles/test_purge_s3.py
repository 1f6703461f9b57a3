"""Purging a deleted repository deletes its bundle objects from S3 (issue 8)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from bundles import services
from bundles.models import Bundle, BundleState
from repos import lifecycle
from repos.models import Repository
from repos.tasks import purge_deleted_repositories
from tests.bundles.conftest import add_commits
from tests.bundles.test_s3 import BUCKET, moto_endpoint, s3  # noqa: F401 - fixtures
from tests.factories import RepositoryFactory

pytestmark = pytest.mark.django_db


def test_purge_deletes_the_repositorys_objects_from_s3(s3, git_home, tmp_path, settings):  # noqa: F811
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    assert services.bundles_build(repo=repo).status == "built"
    keys = {
        f"b/{k}"
        for k in Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).values_list(
            "storage_key", flat=True
        )
    }
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="b/").get("Contents", [])}
    assert keys and keys <= listed

    lifecycle.repository_soft_delete(repo=repo, acting_user=repo.owner)
    Repository.objects.filter(pk=repo.pk).update(
        deleted_at=timezone.now() - timedelta(days=settings.REPOSITORY_DELETE_RETENTION_DAYS, minutes=1)
    )
    assert purge_deleted_repositories() == 1
    listed = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="b/").get("Contents", [])}
    assert not keys & listed
    assert not Repository.objects.filter(pk=repo.pk).exists() and not repo.disk_path.exists()
