"""A build whose worker died is marked failed, never counts as covering a later request, and the
scheduler builds the repository again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from bundles import locking, services
from bundles.models import BuildState, Bundle, BundleBuild, BundleLock, BundleState
from bundles.tasks import schedule_bundle_builds
from tests import live
from tests.bundles.conftest import add_commits
from tests.bundles.test_worker import HANG
from tests.factories import RepositoryFactory
from tests.repos.test_locking import holding
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def due() -> set[int]:
    return set(services.repositories_due_for_bundles().values_list("pk", flat=True))


def killed_mid_build(repo, live_env, tmp_path) -> int:
    """Run a build in its own process and SIGKILL it after it stored its first object."""
    marker = tmp_path / f"paused-{repo.pk}"
    proc = subprocess.Popen(
        [sys.executable, "-c", HANG, str(repo.pk), str(marker)],
        env=live_env,
        cwd=live.BASE_DIR,
        start_new_session=True,
    )
    try:
        wait_until(marker.exists, timeout=60, what="the build paused after storing", alive=proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return proc.pid


@pytest.fixture
def built_repo(bundle_store, git_home, tmp_path):
    """A repository with published bundles, then a push to main after its build."""
    repo = RepositoryFactory()
    work = tmp_path / "work"
    add_commits(repo.disk_path, work, git_home, 2)
    assert services.bundles_build(repo=repo).status == "built"
    add_commits(repo.disk_path, work, git_home, 1)
    return repo


def test_dead_build_does_not_cover_a_later_request(built_repo, live_env, tmp_path):
    requested = timezone.now()  # after the fixture's build, before the one that dies
    pid = killed_mid_build(built_repo, live_env, tmp_path)
    dead = BundleBuild.objects.filter(repository=built_repo).order_by("-id").first()
    assert dead.state == BuildState.RUNNING and dead.claimed_by.split(":")[1] == str(pid)

    # The request came before the dead build started: that build would have covered it.
    result = services.bundles_build(repo=built_repo, requested_at=requested)
    assert result.status == "built", result
    dead.refresh_from_db()
    assert dead.state == BuildState.FAILED
    assert dead.error == f"worker died: process {pid} on {dead.claimed_by.split(':')[0]} is gone"
    assert dead.finished_at is not None
    assert not locking.is_claimed(built_repo.pk)


def test_scheduler_rebuilds_after_a_dead_build(built_repo, live_env, tmp_path, celery_worker_process):
    pid = killed_mid_build(built_repo, live_env, tmp_path)
    assert BundleLock.objects.get(pk=built_repo.pk).claimed_by.split(":")[1] == str(pid)
    before = set(
        Bundle.objects.filter(repository=built_repo, state=BundleState.PUBLISHED).values_list("pk", flat=True)
    )

    schedule_bundle_builds.delay()  # what beat runs
    wait_until(
        lambda: (
            list(
                BundleBuild.objects.filter(repository=built_repo)
                .order_by("id")
                .values_list("state", flat=True)
            )
            == [BuildState.SUCCEEDED, BuildState.FAILED, BuildState.SUCCEEDED]
        ),
        timeout=60,
        what=lambda: f"a dead build failed between two good ones; worker log:\n{celery_worker_process.log()}",
        alive=celery_worker_process,
    )
    failed = BundleBuild.objects.get(repository=built_repo, state=BuildState.FAILED)
    assert failed.error.startswith("worker died"), failed.error
    after = set(
        Bundle.objects.filter(repository=built_repo, state=BundleState.PUBLISHED).values_list("pk", flat=True)
    )
    assert before < after  # an incremental for the commit the dead build never published
    assert built_repo.pk not in due()


def test_newest_build_failed_is_due(built_repo):
    services.bundles_build(repo=built_repo)
    assert built_repo.pk not in due()
    BundleBuild.objects.create(repository=built_repo, state=BuildState.FAILED, error="storage down")
    assert built_repo.pk in due()


def test_a_hung_holder_keeps_the_lock_but_its_run_fails_with_its_lease(built_repo, settings, live_env):
    """A holder that lives but stops renewing (hung, or on a host that lost the database for
    a while): its run is marked failed after the lease; its lock goes with its process."""
    services.bundles_build(repo=built_repo)
    settings.BUNDLE_STALE_CLAIM = timedelta(seconds=30)
    requested = timezone.now()
    holder = "elsewhere.invalid:4242:abcdef"
    code = f"from repos import locking\nheld = locking.claim('bundles', {built_repo.pk})\nassert held"
    with holding(live_env, code):
        BundleLock.objects.filter(pk=built_repo.pk).update(claimed_at=timezone.now(), claimed_by=holder)
        run = BundleBuild.objects.create(
            repository=built_repo, claimed_by=holder, heartbeat_at=timezone.now()
        )

        assert (
            services.bundles_build(repo=built_repo, requested_at=requested).status == "skipped"
        )  # it covers
        assert services.bundles_build(repo=built_repo).status == "busy"
        assert built_repo.pk not in due()

        stale = timezone.now() - timedelta(seconds=31)
        BundleLock.objects.filter(pk=built_repo.pk).update(claimed_at=stale)
        BundleBuild.objects.filter(pk=run.pk).update(heartbeat_at=stale)
        assert built_repo.pk in due()  # reaped: its newest build failed
        run.refresh_from_db()
        assert run.state == BuildState.FAILED and run.error.startswith("worker died: no heartbeat since")
        # Not covered any more, but the live holder keeps the lock.
        assert services.bundles_build(repo=built_repo, requested_at=requested).status == "busy"
    # Killed: this request runs (and finds the bundles up to date).
    wait_until(
        lambda: not locking.is_claimed(built_repo.pk), timeout=10, what="the killed holder's lock to go"
    )
    assert services.bundles_build(repo=built_repo, requested_at=requested).detail == "bundles are up to date"


def test_a_running_build_renews_its_claim(built_repo, settings, git_home, tmp_path):
    settings.BUNDLE_STALE_CLAIM = timedelta(seconds=2)  # a beat every 0.4 s
    me = locking.claim(built_repo.pk)
    run = BundleBuild.objects.create(
        repository=built_repo, claimed_by=me, heartbeat_at=timezone.now() - timedelta(seconds=60)
    )
    BundleLock.objects.filter(pk=built_repo.pk).update(claimed_at=timezone.now() - timedelta(seconds=60))
    with locking.heartbeat(built_repo.pk, me):
        wait_until(
            lambda: BundleBuild.objects.get(pk=run.pk).heartbeat_at > timezone.now() - timedelta(seconds=2),
            timeout=10,
            what="a fresh heartbeat",
        )
        assert BundleLock.objects.get(pk=built_repo.pk).claimed_at > timezone.now() - timedelta(seconds=2)
        assert services.bundles_reap_dead_builds(repo=built_repo) == 0
        assert locking.claim(built_repo.pk) is None
    time.sleep(0.1)
    locking.release(built_repo.pk, me)
