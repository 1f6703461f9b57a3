"""Every push that changed a ref is recorded: from post-receive's spool file by the web process,
by the replay when the database was locked or the web worker died, and by reconciliation when
a ref moved with no record at all. Real pushes to a real gunicorn, a real SQLite lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from repos import push_spool, pushes, reconcile, sideband, tasks
from repos.git import run_git
from repos.models import Push, PushCommit, RefUpdate
from tests import live
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git
from tests.pushers import World

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40
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


@pytest.fixture
def spool():
    """The session's spool directory, empty before and after each test."""
    directory = Path(settings.PUSH_SPOOL_DIR)
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)


def spooled_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def pushes_of(world) -> list[Push]:
    return list(Push.objects.filter(repository=world.repo).order_by("pk"))


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
    assert wait_until_dead(killed[0])
    assert push_spool.replay() == push_spool.ReplayResult(recorded=1)
    [push] = pushes_of(world)[before:]
    assert [(u.ref, u.new) for u in push.ref_updates.all()] == [("refs/heads/main", new)]
    assert spooled_files(spool) == []
    live.wait_for_http(own_web.url + "/")  # gunicorn replaced the worker


def wait_until_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_reconciliation_records_refs_moved_behind_the_platforms_back_once(world, spool):
    bob = world.add("bob")
    bob.commit("bob's work")
    assert bob.push("HEAD:refs/users/bob/topic").returncode == 0
    bob.commit("nameless")
    assert bob.push("HEAD:refs/for/main").returncode == 0
    assert tasks.reconcile_pushes(world.repo.pk) == "in step"  # nameless pushes recorded by their real name

    path = world.repo.disk_path
    tree = run_git(["rev-parse", "main^{tree}"], repo=path).text.strip()
    moved = run_git(
        ["commit-tree", tree, "-p", world.base_sha, "-m", "behind the back"], repo=path
    ).text.strip()
    run_git(["update-ref", "refs/heads/main", moved], repo=path)
    run_git(["update-ref", "refs/heads/side", world.base_sha], repo=path)
    run_git(["update-ref", "refs/users/ann/x", world.base_sha], repo=path)
    run_git(["update-ref", "-d", "refs/users/bob/topic"], repo=path)  # as cleanup would: not a difference
    run_git(["update-ref", "refs/pull/1/head", moved], repo=path)  # no namespace pushes record
    count = len(pushes_of(world))

    assert tasks.reconcile_pushes(world.repo.pk) == "recorded"
    push = pushes_of(world)[-1]
    assert (push.protocol, push.pusher_name, push.pusher) == ("recovered", "system", None)
    assert [(u.ref, u.old, u.new) for u in push.ref_updates.all()] == [
        ("refs/heads/main", world.base_sha, moved),
        ("refs/heads/side", ZERO, world.base_sha),
        ("refs/users/ann/x", ZERO, world.base_sha),
    ]
    assert PushCommit.objects.filter(push=push, sha=moved).exists()
    assert tasks.reconcile_pushes(world.repo.pk) == "in step"
    assert len(pushes_of(world)) == count + 1

    # A branch deleted on disk is a recovered deletion.
    run_git(["update-ref", "-d", "refs/heads/side"], repo=path)
    assert reconcile.reconcile_repository(world.repo).outcome == "recorded"
    assert [(u.ref, u.old, u.new) for u in pushes_of(world)[-1].ref_updates.all()] == [
        ("refs/heads/side", world.base_sha, ZERO)
    ]
    assert reconcile.reconcile_repository(world.repo).outcome == "in step"


def test_reconciliation_waits_for_a_spooled_push(world, spool):
    path = world.repo.disk_path
    run_git(["update-ref", "refs/heads/side", world.base_sha], repo=path)
    (spool / f"{world.repo.pk}-{'a' * 32}.json").write_text("{}")
    count = len(pushes_of(world))
    assert reconcile.reconcile_repository(world.repo).outcome == "pending"
    assert len(pushes_of(world)) == count


# --- the spool file, as post-receive writes it ------------------------------------------------


def run_post_receive(spool_dir: Path, *, repo, user, updates: str, writer_pid: int, options=()) -> Path:
    spool_id = push_spool.new_spool_id()
    env = {
        "PATH": os.environ["PATH"],
        "HOSTSITE_PUSH_SPOOL_DIR": str(spool_dir),
        "HOSTSITE_PUSH_ID": spool_id,
        "HOSTSITE_REPO_ID": str(repo.pk),
        "HOSTSITE_PUSHER": user.username,
        "HOSTSITE_PUSHER_ID": str(user.pk),
        "HOSTSITE_SPOOL_WRITER_PID": str(writer_pid),
        "GIT_PUSH_OPTION_COUNT": str(len(options)),
        **{f"GIT_PUSH_OPTION_{i}": value for i, value in enumerate(options)},
    }
    hook = Path(pushes.__file__).parent / "hooks" / "post_receive.py"
    subprocess.run([live.PY, "-IS", str(hook)], input=updates, text=True, env=env, check=True, timeout=30)
    return push_spool.spool_path(repo.pk, spool_id)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def disk_repo(source_repo, git_home):
    repo = RepositoryFactory()
    git(
        git_home,
        "--git-dir",
        str(repo.disk_path),
        "fetch",
        "-q",
        "--no-tags",
        str(source_repo),
        "trunk:refs/heads/trunk",
    )
    sha = git(git_home, "--git-dir", str(repo.disk_path), "rev-parse", "trunk").stdout.strip()
    return repo, sha


def test_post_receive_spools_durably_and_a_replay_records_it_once(disk_repo, spool):
    repo, sha = disk_repo
    user = UserFactory(username="dora")
    path = run_post_receive(
        spool,
        repo=repo,
        user=user,
        updates=f"{ZERO} {sha} refs/heads/trunk\n",
        writer_pid=dead_pid(),
        options=["title=Hello", "hostsite.for=forged"],
    )
    record = json.loads(path.read_text())
    assert (record["repository_id"], record["pusher"], record["updates"]) == (
        repo.pk,
        "dora",
        [[ZERO, sha, "refs/heads/trunk"]],
    )
    assert record["push_options"] == ["title=Hello"]  # the client cannot write server options
    assert list(spool.glob(".*")) == []  # no temporary file left

    assert push_spool.replay() == push_spool.ReplayResult(recorded=1)
    push = Push.objects.get(repository=repo)
    assert (push.pusher, push.push_options, push.spool_id) == (user, ["title=Hello"], record["id"])
    assert push.commits.count() == 3
    assert abs(push.created_at.timestamp() - record["pushed_at"]) < 0.01
    # Recording the same spool id again, as a racing replay would: the same push, nothing new.
    again = pushes.push_record(
        repo=repo, pusher=user, updates=[pushes.Update(ZERO, sha, "refs/heads/trunk")], spool_id=record["id"]
    )
    assert again == push and Push.objects.filter(repository=repo).count() == 1
    # Callers without a spool (merges, mirrors, imports, removals) record every call.
    pushes.push_record(
        repo=repo, pusher=user, updates=[pushes.Update(sha, ZERO, "refs/heads/x")], protocol="web"
    )
    assert Push.objects.filter(repository=repo).count() == 2


def test_a_young_spool_file_of_a_live_writer_waits_and_a_bad_one_is_set_aside(disk_repo, spool):
    repo, sha = disk_repo
    user = UserFactory(username="eve")
    path = run_post_receive(
        spool, repo=repo, user=user, updates=f"{ZERO} {sha} refs/heads/trunk\n", writer_pid=os.getpid()
    )
    (spool / f"{repo.pk}-{'b' * 32}.json").write_text("not json")
    result = push_spool.replay()
    assert (result.recorded, result.waiting, result.failed) == (0, 1, 1)
    assert path.exists() and (spool / "failed" / f"{repo.pk}-{'b' * 32}.json").exists()
    assert not Push.objects.filter(repository=repo).exists()
    assert push_spool.replay(grace=0).recorded == 1


# --- the note before the final flush ----------------------------------------------------------


def test_the_relay_sends_a_note_on_band_2_before_the_final_flush():
    report = b"0013\x01000eunpack ok\n0000"  # band 1 carrying report-status, then the end
    relay = sideband.FsckRelay()
    out = relay.feed(report[:10]) + relay.feed(report[10:])
    assert out == report[:-4]  # the final flush is held
    out += relay.finish(b"hostsite: delayed\n")
    assert out == report[:-4] + b"0017\x02hostsite: delayed\n" + b"0000"

    relay = sideband.FsckRelay()  # a flush followed by more output is relayed as it came
    assert relay.feed(b"0000") + relay.feed(b"0009\x02hi\n0000") + relay.finish() == b"00000009\x02hi\n0000"


@pytest.mark.parametrize("text", ["plain", 'q"uo\\te', "line\nbreak\ttab\x01\x7f", "é€😀", "bad \udcff byte"])
def test_the_hooks_json_reads_back_as_written(text):
    # post-receive writes its record without importing json (the import costs more than the hook).
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "post_receive", Path(settings.BASE_DIR) / "repos/hooks/post_receive.py"
    )
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    record = {"ref": text, "n": None, "i": 7, "t": 1733.5, "u": [["0" * 40, "f" * 40, f"refs/heads/{text}"]]}
    assert json.loads(hook.to_json(record)) == record
