"""Builds in real worker processes: through Celery, and one killed with SIGKILL mid-build."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from bundles import locking, services
from bundles.models import BuildState, Bundle, BundleBuild, BundleLock, BundleState
from bundles.tasks import build_bundles
from tests import live
from tests.bundles.conftest import add_commits
from tests.factories import RepositoryFactory
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def listed(live_server_url, repo) -> list[str]:
    request = urllib.request.Request(
        f"{live_server_url}/{repo.full_name}/bundle-list", headers={"Accept-Encoding": "zstd"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return [line for line in response.read().decode().splitlines() if line.strip().startswith("uri")]


def test_worker_builds_through_the_broker(celery_worker_process, bundle_store, git_home, tmp_path, live_env):
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    build_bundles.delay(repo.pk)
    # The history row is finished just after publication, and the repository's lock released
    # just after that (on a loaded machine, a moment later): wait for all three.
    wait_until(
        lambda: (
            Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).count() == 2
            and BundleBuild.objects.get(repository=repo).state != BuildState.RUNNING
            and not locking.is_claimed(repo.pk)
        ),
        timeout=60,
        what=lambda: (
            "two published bundles, a finished build and the lock released; worker log:\n"
            f"{celery_worker_process.log()}"
        ),
        alive=celery_worker_process,
    )
    assert BundleBuild.objects.get(repository=repo).state == BuildState.SUCCEEDED
    assert not locking.is_claimed(repo.pk)
    assert "Task bundles.tasks.build_bundles" in celery_worker_process.log()


# A build in its own process that stops after storing its first object, as if the machine
# were about to lose power; the test then kills it with SIGKILL.
HANG = """
import sys, time, django
django.setup()
from bundles import build, services
from repos.models import Repository
def hang():
    open(sys.argv[2], "w").close()
    time.sleep(600)
build.FAILPOINTS["stored-standard"] = hang
services.bundles_build(repo=Repository.objects.get(pk=int(sys.argv[1])))
"""


def test_worker_killed_mid_build(live_env, live_server_url, bundle_store, git_home, tmp_path):
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3)
    marker = tmp_path / "paused"
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

    # Its object is in storage but nothing lists it; the lock still names the dead process.
    stored = Bundle.objects.get(repository=repo, state=BundleState.BUILDING, flavor="standard")
    assert (bundle_store / stored.storage_key).exists()
    assert listed(live_server_url, repo) == []
    assert BundleLock.objects.get(pk=repo.pk).claimed_by.split(":")[1] == str(proc.pid)

    from django.conf import settings

    leftovers = list((settings.VAR_DIR / "tmp").glob(f"bundle-{repo.pk}-*"))
    assert leftovers  # the dead build's scratch directory

    # The next run takes the dead claim over at once, clears up after it, and completes.
    assert services.bundles_build(repo=repo).status == "built"
    assert not any(path.exists() for path in leftovers)
    assert len(listed(live_server_url, repo)) == 1
    assert not locking.is_claimed(repo.pk)
    assert Bundle.objects.get(pk=stored.pk).state == BundleState.DELETED
    assert list(
        BundleBuild.objects.filter(repository=repo).order_by("id").values_list("state", flat=True)
    ) == [BuildState.FAILED, BuildState.SUCCEEDED]


def test_schedule_picks_never_built_and_pushed_repositories(world, bundle_store):
    due = set(services.repositories_due_for_bundles().values_list("pk", flat=True))
    assert world.repo.pk in due  # never built
    services.bundles_build(repo=world.repo)
    assert world.repo.pk not in set(services.repositories_due_for_bundles().values_list("pk", flat=True))
    alice = world.add("alice")
    alice.commit("workspace only")
    assert alice.push("HEAD:refs/users/alice/x").returncode == 0
    assert world.repo.pk not in set(services.repositories_due_for_bundles().values_list("pk", flat=True))
    world.owner.commit("canonical")
    assert world.owner.push("main").returncode == 0
    assert world.repo.pk in set(services.repositories_due_for_bundles().values_list("pk", flat=True))
    assert BundleBuild.objects.filter(repository=world.repo).count() == 1
