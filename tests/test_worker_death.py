"""Tasks survive a dying worker, on the filesystem broker and on Redis: `kill -9` of the worker's
main process or of the pool process running a task, mid-task, and every queued merged-ref
cleanup and bundle build still completes, once in effect.

The workers are real Celery workers started through a small wrapper that pauses the first run
of the builds and cleanups a test arms (a build after its first bundle is stored, a cleanup
holding the repository lock before archiving), so that the kill lands mid-task; reruns go
straight through.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from celery import Celery

from bundles import locking
from bundles.models import BuildState, Bundle, BundleBuild, BundleState
from repos.models import Push
from tests import live
from tests.bundles.conftest import add_commits
from tests.factories import RepositoryFactory
from tests.support.wait import wait_until
from workspaces.models import ArchivedRef

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

# The suite's Redis when it runs on one, else a local one; the keys are the test's own (Broker).
_SUITE_BROKER = os.environ.get("CELERY_BROKER_URL", "")
REDIS_URL = _SUITE_BROKER if _SUITE_BROKER.startswith("redis://") else "redis://127.0.0.1:6379/14"
REDIS_LEASE = 8  # CELERY_VISIBILITY_TIMEOUT for the Redis workers, so the test waits seconds

WRAPPER = """
import os, sys, time
from pathlib import Path

import django

django.setup()
from bundles import build, services
from workspaces import cleanup

current = {}


def pause(name):
    if not (Path(os.environ["PAUSE_DIR"]) / f"{name}.armed").exists():
        return  # not a run the test stops
    try:
        fd = os.open(Path(os.environ["PAUSE_DIR"]) / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # paused once already: this is the rerun
    os.write(fd, str(os.getpid()).encode())
    os.close(fd)
    time.sleep(600)


real_build, real_archive = services.bundles_build, cleanup.archive_landed


def bundles_build(*, repo, **kwargs):
    current["repo"] = repo.pk
    return real_build(repo=repo, **kwargs)


def archive_landed(repo, branch, landed, *, push):
    pause(f"cleanup-{push.pk}")
    return real_archive(repo, branch, landed, push=push)


services.bundles_build = bundles_build
cleanup.archive_landed = archive_landed
build.FAILPOINTS["stored-standard"] = lambda: pause(f"build-{current['repo']}")

from celery.__main__ import main

sys.argv = ["celery", *sys.argv[1:]]
main()
"""


def redis_reachable() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


class Broker:
    """One broker and a queue of this test's own; publishes like the web server does."""

    def __init__(self, kind: str, live_env: dict[str, str]):
        from django.conf import settings

        self.kind = kind
        self.queue = f"death-{uuid.uuid4().hex[:12]}"
        self.env = {**live_env, "CELERY_QUEUE": self.queue}
        # Not the current app: shared tasks of this process must keep resolving to hostsite's.
        self.app = Celery(f"publisher-{self.queue}", set_as_current=False)
        # Celery prefers a CELERY_BROKER_URL in the environment (the suite's own broker) to
        # broker_url; the write URL is taken first.
        if kind == "redis":
            # Keys of this test's own: kombu's unacked hash is per key prefix, and another run
            # (a second checkout, CI) may use this database at the same time.
            prefix = f"{self.queue}:"
            self.env.update(
                {
                    "CELERY_BROKER_URL": REDIS_URL,
                    "CELERY_VISIBILITY_TIMEOUT": str(REDIS_LEASE),
                    "CELERY_KEY_PREFIX": prefix,
                }
            )
            self.app.conf.broker_url = self.app.conf.broker_write_url = REDIS_URL
            self.app.conf.broker_transport = "hostsite.redisbroker:Transport"
            self.app.conf.broker_transport_options = {"global_keyprefix": prefix}
        else:
            # The worker falls back to the embedded default: the filesystem broker under VAR_DIR.
            self.env.pop("CELERY_BROKER_URL", None)
            self.app.conf.broker_url = self.app.conf.broker_write_url = "filesystem://"
            self.app.conf.broker_transport = "hostsite.fsbroker:Transport"
            folders = {
                "data_folder_in": settings.BROKER_DIR / "queue",
                "data_folder_out": settings.BROKER_DIR / "queue",
                "control_folder": settings.BROKER_DIR / "control",
                "processing_folder": settings.BROKER_DIR / "processing",
            }
            for folder in folders.values():
                folder.mkdir(parents=True, exist_ok=True)
            self.app.conf.broker_transport_options = {key: str(path) for key, path in folders.items()}

    def send(self, name: str, *args) -> None:
        self.app.send_task(name, args=args, queue=self.queue)

    def purge(self) -> None:
        with self.app.connection_for_write() as conn, contextlib.suppress(Exception):
            conn.default_channel.queue_purge(self.queue)
        self.app.close()


@pytest.fixture(params=["filesystem", "redis"])
def broker(request, live_env):
    if request.param == "redis" and not redis_reachable():
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    broker = Broker(request.param, live_env)
    yield broker
    broker.purge()


class Workers:
    def __init__(self, broker: Broker, tmp_path: Path):
        self.broker = broker
        self.pauses = tmp_path / "pauses"
        self.pauses.mkdir()
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.started: list[live.ManagedProcess] = []

    def start(self, concurrency: int) -> live.ManagedProcess:
        n = len(self.started)
        worker = live.ManagedProcess(
            f"worker{n}",
            [
                live.PY,
                "-c",
                WRAPPER,
                "-A",
                "hostsite",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--queues",
                self.broker.queue,
                "--hostname",
                f"death{n}-{uuid.uuid4().hex[:6]}@%h",
                "--without-mingle",
                "--without-gossip",
            ],
            {**self.broker.env, "PAUSE_DIR": str(self.pauses)},
            self.logs,
        )
        self.started.append(worker)
        wait_until(lambda: worker.logged("ready."), timeout=90, what=worker.log, alive=worker)
        return worker

    def arm(self, name: str) -> None:
        (self.pauses / f"{name}.armed").touch()

    def paused_pid(self, name: str) -> int:
        marker = self.pauses / name
        wait_until(lambda: marker.exists() and marker.read_text(), timeout=90, what=self.log)
        return int(marker.read_text())

    def kill_paused_in_turn(self, *names: str) -> None:
        """SIGKILL each named task's pool process as it pauses, in whatever order the broker
        hands them out (two messages sent within the same millisecond have no fixed order)."""
        pending = list(names)

        def paused() -> list[str]:
            return [n for n in pending if (self.pauses / n).exists() and (self.pauses / n).read_text()]

        while pending:
            wait_until(lambda: paused(), timeout=90, what=self.log)
            for name in paused():
                os.kill(int((self.pauses / name).read_text()), signal.SIGKILL)
                pending.remove(name)

    def log(self) -> str:
        return "\n".join(f"--- {w.name}\n{w.log()}" for w in self.started)

    def stop(self):
        for worker in self.started:
            worker.stop()


@pytest.fixture
def workers(broker, tmp_path):
    workers = Workers(broker, tmp_path)
    yield workers
    workers.stop()


def merged_workspace(world):
    """alice's workspace ref, merged into main by the owner; the merge push (whose cleanup
    archives the ref) and the ref."""
    alice = world.add("alice")
    alice.commit("alice's work", name="a.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    owner = world.owner
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/feature", check=True)
    owner.git("merge", "--quiet", "--no-ff", "-m", "merge alice", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    push = Push.objects.filter(repository=world.repo).order_by("-pk").first()
    return push, "refs/users/alice/feature"


def build_history(repo) -> list[str]:
    return list(BundleBuild.objects.filter(repository=repo).order_by("id").values_list("state", flat=True))


def assert_built_once_after_death(repo):
    """The killed build is in the history as failed because its worker died; one rerun built
    and published the bundle (both flavors), and the lock comes free (the build records its
    outcome, then lets go of the lock)."""
    runs = list(BundleBuild.objects.filter(repository=repo).order_by("id"))
    assert [r.state for r in runs] == [BuildState.FAILED, BuildState.SUCCEEDED], [
        (r.state, r.error) for r in runs
    ]
    assert runs[0].error.startswith("worker died"), runs[0].error
    assert Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).count() == 2
    wait_until(lambda: not locking.is_claimed(repo.pk), timeout=10, what="the build lock to come free")


def assert_cleaned_once(world, push, ref):
    assert ref not in world.refs()
    assert ArchivedRef.objects.filter(repository=world.repo, ref=ref).count() == 1
    assert ArchivedRef.objects.get(repository=world.repo, ref=ref).push_id == push.pk


def all_done(world, push, repos) -> bool:
    return (
        ArchivedRef.objects.filter(repository=world.repo, push=push).exists()
        and all(BuildState.SUCCEEDED in build_history(repo) for repo in repos)
        and not BundleBuild.objects.filter(state=BuildState.RUNNING).exists()
    )


def test_main_process_killed_mid_task(broker, workers, world, git_home, tmp_path):
    push, ref = merged_workspace(world)
    first, second = RepositoryFactory(), RepositoryFactory()
    for n, repo in enumerate((first, second)):
        add_commits(repo.disk_path, tmp_path / f"work{n}", git_home, 3, tag="v1")
    doomed = workers.start(concurrency=2)
    workers.arm(f"build-{first.pk}")
    workers.arm(f"cleanup-{push.pk}")

    broker.send("bundles.tasks.build_bundles", first.pk, time.time())
    broker.send("workspaces.tasks.cleanup_after_push", push.pk)
    # Both pool processes are now busy; these wait in the queue behind them.
    build_pid, cleanup_pid = workers.paused_pid(f"build-{first.pk}"), workers.paused_pid(f"cleanup-{push.pk}")
    broker.send("bundles.tasks.build_bundles", second.pk, time.time())
    broker.send("workspaces.tasks.cleanup_after_push", push.pk)  # a duplicate delivery
    assert BundleBuild.objects.get(repository=first).state == BuildState.RUNNING

    os.kill(doomed.proc.pid, signal.SIGKILL)
    doomed.proc.wait()
    # What `make run` does next: its pool processes, orphaned mid-task, go too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(doomed.proc.pid, signal.SIGKILL)
    wait_until(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in (build_pid, cleanup_pid)),
        timeout=90,
        what="the killed worker's children to exit",
    )

    workers.start(concurrency=1)
    wait_until(lambda: all_done(world, push, (first, second)), timeout=90, what=workers.log)
    assert_built_once_after_death(first)
    assert build_history(second) == [BuildState.SUCCEEDED]
    assert_cleaned_once(world, push, ref)
    if broker.kind == "filesystem":
        assert "restored 2 messages of workers that are gone" in workers.log()


def test_pool_process_killed_mid_task(broker, workers, world, git_home, tmp_path):
    push, ref = merged_workspace(world)
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    worker = workers.start(concurrency=1)
    workers.arm(f"build-{repo.pk}")
    workers.arm(f"cleanup-{push.pk}")

    broker.send("bundles.tasks.build_bundles", repo.pk, time.time())
    broker.send("workspaces.tasks.cleanup_after_push", push.pk)
    workers.kill_paused_in_turn(f"build-{repo.pk}", f"cleanup-{push.pk}")

    wait_until(lambda: all_done(world, push, (repo,)), timeout=90, what=workers.log)
    assert worker.proc.poll() is None  # the same worker, with new pool processes, ran them again
    assert "Worker exited prematurely: signal 9 (SIGKILL)" in worker.log()
    assert_built_once_after_death(repo)
    assert_cleaned_once(world, push, ref)


def test_every_task_is_acknowledged_late_and_requeued_when_its_worker_dies():
    from hostsite.celery import app

    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert len(ours) >= 10
    assert [name for name, task in ours.items() if not (task.acks_late and task.reject_on_worker_lost)] == []
