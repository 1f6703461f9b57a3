"""Reconciliation records a ref that moved with no record at all (once, and not before a
spooled push is replayed); post-receive's spool file is durable, replayed once, and a young
or broken one is handled; the relay's band-2 note; the hook's JSON."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from gitcore.git import run_git
from repos import push_spool, pushes, reconcile, sideband, tasks
from repos.models import Push, PushCommit, Repository
from tests import live
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git
from tests.repos import push_support
from tests.repos.push_support import ZERO, pushes_of

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
spool = push_support.spool  # the fixture


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


def test_make_runs_preparation_does_each_step_and_seeds_once(request, spool, settings, tmp_path, capsys):
    """`manage.py prepare_run`, what make run does before it starts: static files collected, the
    demo seeded once, the spool replayed (migrating a fresh database: tests/test_make_run.py)."""
    settings.STATIC_ROOT = tmp_path / "static"
    call_command("prepare_run")
    assert "password '" in capsys.readouterr().out
    assert Repository.objects.filter(owner__username="demo", name="hello-hostsite").exists()
    assert (tmp_path / "static" / "js" / "refswitch.js").is_file()

    repo, sha = request.getfixturevalue("disk_repo")
    user = UserFactory(username="dora")
    updates = f"{ZERO} {sha} refs/heads/trunk\n"
    run_post_receive(spool, repo=repo, user=user, updates=updates, writer_pid=dead_pid())
    call_command("prepare_run")
    assert "password '" not in capsys.readouterr().out
    assert Push.objects.filter(repository=repo, pusher=user).count() == 1
    assert push_support.spooled_files(spool) == []


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
