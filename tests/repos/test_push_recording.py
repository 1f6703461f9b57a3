"""Every push that changed a ref is recorded: from post-receive's spool file by the web process,
and by the replay when the database was locked or the web worker died. Real pushes to a real
gunicorn, a real SQLite lock. Reconciliation and the spool file itself: test_push_spool.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from repos import push_spool
from repos.models import RefUpdate
from tests import live
from tests.pushers import World
from tests.repos import push_support
from tests.repos.push_support import pushes_of, spooled_files
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
spool = push_support.spool  # the fixture
DELAYED = "remote: hostsite: your push is complete, but recording it in the pushlog is delayed"


@pytest.fixture(scope="module")
def own_web(live_env, tmp_path_factory):
    """A web server of this module's own, with a short SQLite busy timeout (a locked database
    fails a recording in 1.5 s, not the default's seconds), and workers this module may kill."""
    env = {**live_env, "DATABASE_BUSY_TIMEOUT_MS": "1500"}
    port = live.free_port()
    web = live.start_web(env, port, tmp_path_factory.mktemp("push-recording-web"))
    web.url = f"http://127.0.0.1:{port}"
    yield web
    web.stop()


class DatabaseLock:
    """SQLite's write lock, held by a connection of our own (BEGIN IMMEDIATE), taken as soon as
    receive-pack starts reading the pack: after the request's own writes (the token's last use),
    before the push is recorded."""

    def __init__(self, repo_path: Path):
        self.objects = Path(repo_path) / "objects"
        self.held = threading.Event()
        self.release = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def _run(self):
        deadline = time.monotonic() + 60
        while not any(self.objects.glob("tmp_objdir-incoming-*")) and time.monotonic() < deadline:
            time.sleep(0.001)
        db = sqlite3.connect(connection.settings_dict["NAME"], timeout=5, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            self.held.set()
            self.release.wait(120)
            db.execute("ROLLBACK")
        finally:
            db.close()

    def __exit__(self, *exc):
        self.release.set()
        self._thread.join(30)


def big_commit(pusher, name: str, megabytes: int = 24) -> str:
    """A commit with incompressible content: its pack takes receive-pack long enough to read
    that the lock is taken before the push is recorded."""
    (pusher.work / name).write_bytes(os.urandom(megabytes * 1024 * 1024))
    pusher.git("add", name, check=True)
    pusher.git("commit", "--quiet", "-m", f"add {name}", check=True)
    return pusher.git("rev-parse", "HEAD", check=True).stdout.strip()


@pytest.fixture
def own_world(own_web, tmp_path, git_home):
    if connection.vendor != "sqlite":
        pytest.skip("locks the database with SQLite's BEGIN IMMEDIATE")
    return World(own_web.url, tmp_path, git_home)


def test_a_push_is_recorded_from_its_spool_file_which_then_goes(world, spool):
    new = world.owner.commit("second")
    result = world.owner.push("main")
    assert result.returncode == 0, result.stderr
    assert DELAYED not in result.stderr
    push = pushes_of(world)[-1]
    assert push.spool_id and len(push.spool_id) == 32
    assert [(u.ref, u.new) for u in push.ref_updates.all()] == [("refs/heads/main", new)]
    assert spooled_files(spool) == []


def test_a_locked_database_delays_the_record_and_the_replay_writes_it_once(own_world, spool):
    world = own_world
    before = len(pushes_of(world))
    old = world.base_sha
    new = big_commit(world.owner, "blob.bin")
    with DatabaseLock(world.repo.disk_path) as lock:
        result = world.owner.push("main")
        assert lock.held.is_set(), "the lock was never taken"
    assert result.returncode == 0, result.stderr
    assert DELAYED in result.stderr  # told, while the client still listened
    assert world.refs()["refs/heads/main"] == new  # the push happened
    assert len(pushes_of(world)) == before
    [path] = spooled_files(spool)
    kept = path.read_bytes()

    # The web worker that wrote it lives, but gave the file up: not waited for.
    assert path.stat().st_mtime == 0
    call_command("replay_pushes")
    assert spooled_files(spool) == []
    [push] = pushes_of(world)[before:]
    assert (push.pusher, push.pusher_name, push.protocol) == (world.owner.user, "owner", "http")
    assert [(u.ref, u.old, u.new) for u in push.ref_updates.all()] == [("refs/heads/main", old, new)]
    assert list(push.commits.values_list("sha", flat=True)) == [new]

    # The same file again (a replay racing the web process): still one push.
    path.write_bytes(kept)
    assert push_spool.replay(grace=0).recorded == 1
    assert spooled_files(spool) == []
    assert len(pushes_of(world)) == before + 1
    assert RefUpdate.objects.filter(push__repository=world.repo, new=new).count() == 1


def test_a_web_worker_killed_before_recording_leaves_the_spool_file_for_the_replay(own_web, own_world, spool):
    world = own_world
    before = len(pushes_of(world))
    new = big_commit(world.owner, "other.bin")
    killed = []

    def kill_the_writer():
        deadline = time.monotonic() + 60
        while not spooled_files(spool) and time.monotonic() < deadline:
            time.sleep(0.001)
        record = json.loads(spooled_files(spool)[0].read_text())
        # A worker of our own server, and the process that would record the push.
        assert Path(f"/proc/{record['writer_pid']}/stat").read_text().split()[3] == str(own_web.proc.pid)
        os.kill(record["writer_pid"], signal.SIGKILL)
        killed.append(record["writer_pid"])

    with DatabaseLock(world.repo.disk_path):
        killer = threading.Thread(target=kill_the_writer, daemon=True)
        killer.start()
        result = world.owner.push("main")
        killer.join(30)
    assert killed, result.stderr
    assert result.returncode != 0  # the connection died with the worker
    assert world.refs()["refs/heads/main"] == new
    assert len(pushes_of(world)) == before

    # Its writer is gone (once the kernel has finished with it): replayed at once, grace
    # period or not.
    wait_until(lambda: gone_or_zombie(killed[0]), timeout=10, what=f"process {killed[0]} to die")
    assert push_spool.replay() == push_spool.ReplayResult(recorded=1)
    [push] = pushes_of(world)[before:]
    assert [(u.ref, u.new) for u in push.ref_updates.all()] == [("refs/heads/main", new)]
    assert spooled_files(spool) == []
    live.wait_for_http(own_web.url + "/")  # gunicorn replaced the worker


def gone_or_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True
