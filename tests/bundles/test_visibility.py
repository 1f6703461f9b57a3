"""Storage areas: public repositories' bundles under public/, private ones' under private/, and
what a visibility change (or a key from before areas existed) does. The S3 side, with a bucket
policy, is in test_s3.py; these run on the file backend."""

from __future__ import annotations

import re
from unittest import mock

import pytest
from django.test import Client

from bundles import build, services
from bundles.models import Bundle, BundleState, Kind
from repos import services as repo_services
from repos.models import Repository, Visibility
from tests.bundles.conftest import add_commits
from tests.eager import run_followers
from tests.factories import RepositoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(git_home, tmp_path, bundle_store):
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 2, tag="v1")
    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE
    return repo


def uris(repo, **headers) -> list[str]:
    response = Client().get(f"/{repo.full_name}.git/bundle-list", HTTP_ACCEPT_ENCODING="zstd", **headers)
    assert response.status_code == 200
    return re.findall(r"uri = (\S+)", response.content.decode())


def test_legacy_keys_are_not_listed_and_are_rebuilt(repo, bundle_store, settings):
    # As stored before areas existed: <sha256>.bundle at the top of the store.
    for row in Bundle.objects.filter(repository=repo):
        legacy = row.storage_key.removeprefix("public/")
        (bundle_store / row.storage_key).rename(bundle_store / legacy)
        Bundle.objects.filter(pk=row.pk).update(storage_key=legacy)
    legacy_rows = list(Bundle.objects.filter(repository=repo))
    assert uris(repo) == []
    assert services.repositories_due_for_bundles().filter(pk=repo.pk).exists()

    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE
    listed = uris(repo)
    assert len(listed) == 1 and listed[0].startswith("http://testserver/bundles/public/")
    assert not services.repositories_due_for_bundles().filter(pk=repo.pk).exists()
    # The legacy objects are superseded like any others: served during the grace period at
    # their old URLs, then deleted.
    for row in legacy_rows:
        assert Bundle.objects.get(pk=row.pk).state == BundleState.DELETED
    assert Client().get(f"/bundles/{legacy_rows[0].storage_key}").status_code == 200
    settings.BUNDLE_DELETE_GRACE = build.timezone.timedelta(0)
    assert build.prune(build.get_storage(), repo=repo) == 2
    assert not any((bundle_store / row.storage_key).exists() for row in legacy_rows)


def test_visibility_change_during_a_build_publishes_nothing(repo, git_home, tmp_path, bundle_store):
    # The store is the session's: files other tests left there (their repositories' bundles)
    # are not this build's to delete. This repository's base from before is.
    base = {bundle_store / row.storage_key for row in Bundle.objects.filter(repository=repo)}
    assert base and all(path.exists() for path in base)
    others = set((bundle_store / "public").glob("*.bundle")) - base
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    # A change saved without the service (no signal): the build must notice by itself.
    build.FAILPOINTS["before-publish"] = lambda: Repository.objects.filter(pk=repo.pk).update(
        visibility=Visibility.PRIVATE
    )
    result = services.bundles_build(repo=repo)
    assert result.outcome.kind == "" and "visibility changed" in result.detail
    assert not Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).exists()
    # Everything under public/, the base of before and what this run uploaded, is gone now.
    assert not Bundle.objects.filter(repository=repo, storage_key__startswith="public/").exists()
    assert not set((bundle_store / "public").glob("*.bundle")) - others
    assert not any(path.exists() for path in base)
    build.FAILPOINTS.clear()
    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE
    keys = list(
        Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).values_list(
            "storage_key", flat=True
        )
    )
    assert len(keys) == 2 and all(key.startswith("private/") for key in keys)


def test_private_to_public_unlists_the_private_area(
    git_home, tmp_path, bundle_store, django_capture_on_commit_callbacks, monkeypatch
):
    repo = RepositoryFactory(visibility=Visibility.PRIVATE)
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    services.bundles_build(repo=repo)
    private = list(Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED))
    assert all(row.storage_key.startswith("private/") for row in private)

    run_followers(monkeypatch)  # the move is a task; the build it queues is mocked
    with (
        mock.patch("bundles.tasks.build_bundles.apply_async") as enqueue,
        django_capture_on_commit_callbacks(execute=True),
    ):
        repo_services.repository_update(repo=repo, visibility=Visibility.PUBLIC)
    enqueue.assert_called_once()
    assert uris(repo) == []
    # Nothing is exposed by private objects staying a while: they keep their grace period.
    assert all((bundle_store / row.storage_key).exists() for row in private)
    assert services.bundles_build(repo=repo).outcome.kind == Kind.BASE
    listed = uris(repo)
    assert len(listed) == 1 and listed[0].startswith("http://testserver/bundles/public/")
