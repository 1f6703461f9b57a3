"""A replica follows the primary (the live server) by fetching from its internal endpoint."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from gitcore.git import GitError, run_git
from replication.models import ReplicaState
from replication.sync import CURRENT, FETCHED
from repos import changelog
from tests.replication.support import fsck, record, refs

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def test_every_ref_is_copied_and_the_copy_is_sound(world, make_replica, jobs):
    repo = world.repo
    olga = world.add("olga", "maintainer")
    olga.commit("olga's work", "w.txt")
    assert olga.push("HEAD:refs/users/olga/feature").returncode == 0
    head = world.owner.git("rev-parse", "HEAD", check=True).stdout.strip()
    # Namespaces no client is shown: they are copied all the same.
    for ref in ("refs/takedown/olga/old", "refs/archive/olga/1/feature", "refs/imported/x"):
        run_git(["update-ref", ref, head], repo=repo.disk_path)
    record(repo.pk)
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == refs(repo.disk_path)
    assert "refs/users/olga/feature" in replica.refs(repo.pk)
    fsck(replica.path(repo.pk))
    head_ref = run_git(["symbolic-ref", "HEAD"], repo=replica.path(repo.pk)).text.strip()
    assert head_ref == f"refs/heads/{repo.default_branch}"
    repo.refresh_from_db()
    state = ReplicaState.objects.get(node__name=replica.name, repository=repo)
    assert state.generation == repo.generation and state.error == ""
    assert replica.sync(repo.pk) == CURRENT


def test_the_copy_s_head_follows_the_default_branch(world, make_replica, jobs):
    from repos import services

    repo = world.repo
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    assert world.owner.push("HEAD:refs/heads/develop").returncode == 0
    assert replica.sync(repo.pk) == FETCHED
    services.repository_update(repo=repo, default_branch="develop", actor=world.owner.user)
    assert replica.sync(repo.pk) == FETCHED
    head = run_git(["symbolic-ref", "HEAD"], repo=replica.path(repo.pk)).text.strip()
    assert head == "refs/heads/develop"
    # A push leaves HEAD alone, on the primary and on the copy.
    world.owner.commit("more", "more.txt")
    assert world.owner.push("HEAD:refs/heads/develop").returncode == 0
    assert replica.sync(repo.pk) == FETCHED
    assert run_git(["symbolic-ref", "HEAD"], repo=replica.path(repo.pk)).text.strip() == head


def test_fifty_queued_jobs_make_one_fetch(world, make_replica, jobs):
    repo = world.repo
    replica = make_replica()
    for _ in range(50):
        record(repo.pk)
    queued = [args for name, args, queue in jobs if queue == f"replica-{replica.name}"]
    assert len(queued) == 50 and name_is_sync(jobs)
    results = [replica.sync(repo_id, generation) for repo_id, generation in queued]
    assert results.count(FETCHED) == 1 and results.count(CURRENT) == 49
    repo.refresh_from_db()
    assert ReplicaState.objects.get(node__name=replica.name, repository=repo).generation == repo.generation


def test_jobs_running_together_wait_for_one_fetch(world, make_replica):
    from django.db import connection

    from replication import sync

    repo = world.repo
    replica = make_replica()
    generation = record(repo.pk).generation
    results = []

    def job():
        try:
            results.append(sync.sync_repository(repo.pk, generation))
        finally:
            connection.close()

    with replica.active():
        threads = [threading.Thread(target=job) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    assert sorted(results) == sorted([FETCHED] + [CURRENT] * 5)


def name_is_sync(jobs) -> bool:
    return {name for name, _args, _queue in jobs} == {"replication.tasks.sync_repository"}


def test_the_generation_recorded_is_the_one_read_before_the_fetch(world, make_replica):
    repo = world.repo
    replica = make_replica()
    old = record(repo.pk).generation
    record(repo.pk)
    # A job for an older generation still brings the copy to the newest one, and says so.
    assert replica.sync(repo.pk, old) == FETCHED
    repo.refresh_from_db()
    assert ReplicaState.objects.get(node__name=replica.name, repository=repo).generation == repo.generation


def test_a_fetch_killed_mid_way_leaves_the_refs_as_they_were(world, make_replica, tmp_path):
    from replication import sync

    repo = world.repo
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    before = replica.refs(repo.pk)
    big = world.owner.work / "big.bin"
    big.write_bytes(os.urandom(48 * 1024 * 1024))
    world.owner.git("add", "big.bin", check=True)
    world.owner.git("commit", "-qm", "big", check=True)
    assert world.owner.push("main").returncode == 0
    copy = replica.path(repo.pk)
    outcome: list = []

    def job():
        from django.db import connection

        try:
            outcome.append(sync.sync_repository(repo.pk, changelog.current_generation(repo.pk)))
        except Exception as exc:
            outcome.append(exc)
        finally:
            connection.close()

    with replica.active():
        thread = threading.Thread(target=job)
        thread.start()
        killed = _kill_fetch_once_a_pack_arrives(copy, deadline=time.monotonic() + 60)
        thread.join(timeout=120)
    assert killed, f"the fetch ended before it could be killed: {outcome}"
    assert isinstance(outcome[0], GitError)
    assert replica.refs(repo.pk) == before
    state = ReplicaState.objects.get(node__name=replica.name, repository=repo)
    assert state.failures == 1 and state.error
    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == refs(repo.disk_path)
    fsck(copy)
    assert ReplicaState.objects.get(node__name=replica.name, repository=repo).error == ""


def _kill_fetch_once_a_pack_arrives(copy: Path, deadline: float) -> bool:
    """SIGKILL the replica's `git fetch` (and its helpers) once index-pack writes the pack."""
    pack_dir = copy / "objects" / "pack"
    while time.monotonic() < deadline:
        if any(p.name.startswith("tmp_pack") and p.stat().st_size > 0 for p in pack_dir.iterdir()):
            pids = _fetch_processes(copy)
            if pids:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                return True
        time.sleep(0.002)
    return False


def _fetch_processes(copy: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"fetch" in argv and str(copy).encode() in argv:
            found.append(int(entry.name))
            for child in Path(f"/proc/{entry.name}/task").glob("*/children"):
                found += [int(pid) for pid in child.read_text().split()]
    return found


def test_an_empty_repository_is_copied_too(live_server_url, make_replica):
    from repos import services
    from tests.factories import UserFactory

    repo = services.repository_create(owner=UserFactory(username="nadia"), name="empty")
    record(repo.pk)
    replica = make_replica()
    assert replica.sync(repo.pk) == FETCHED
    assert replica.refs(repo.pk) == {}
    fsck(replica.path(repo.pk))
