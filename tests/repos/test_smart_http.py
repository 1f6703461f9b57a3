"""Clone, fetch and push with a stock git client against the live server (gunicorn)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repos import services
from repos.models import Push, RefUpdate
from tests.factories import UserFactory
from tests.gitutil import git
from tests.support.wait import wait_until

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def url(base: str, path: str, user=None, token=None) -> str:
    if user:
        host = base.removeprefix("http://")
        return f"http://{user}:{token}@{host}{path}"
    return base + path


@pytest.fixture
def alice(db):
    user = UserFactory(username="alice")
    return user, services.token_create(user=user, scope="write")[1]


@pytest.fixture
def project(alice):
    return services.repository_create(owner=alice[0], name="project")


def commit(env, work: Path, name: str, content: str, message: str) -> str:
    (work / name).write_text(content)
    git(env, "add", name, cwd=work)
    git(env, "commit", "--quiet", "-m", message, cwd=work)
    return git(env, "rev-parse", "HEAD", cwd=work).stdout.strip()


def server_refs(repo) -> dict[str, str]:
    out = subprocess.run(
        ["git", "--git-dir", str(repo.disk_path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


@pytest.mark.parametrize("protocol", ["0", "2"])
def test_push_clone_fetch_roundtrip(live_server_url, alice, project, tmp_path, git_home, protocol):
    user, token = alice
    env = {
        **git_home,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "protocol.version",
        "GIT_CONFIG_VALUE_0": protocol,
    }
    remote = url(live_server_url, "/alice/project.git", "alice", token)
    work = tmp_path / "work"
    git(env, "init", "--quiet", "-b", "main", str(work))
    first = commit(env, work, "a.txt", "1\n", "first")
    result = git(env, "push", remote, "main", cwd=work, check=False)
    assert result.returncode == 0, result.stderr
    assert server_refs(project)["refs/heads/main"] == first

    # Clone (anonymous: the repository is public) and check out the same commit.
    clone = tmp_path / "clone"
    result = git(env, "clone", "--quiet", url(live_server_url, "/alice/project"), str(clone), check=False)
    assert result.returncode == 0, result.stderr
    assert git(env, "rev-parse", "HEAD", cwd=clone).stdout.strip() == first

    # Fast-forward, a new branch, an annotated tag.
    second = commit(env, work, "a.txt", "2\n", "second")
    git(env, "tag", "-a", "v1", "-m", "version 1", cwd=work)
    git(env, "branch", "topic", first, cwd=work)
    result = git(env, "push", remote, "main", "topic", "v1", cwd=work, check=False)
    assert result.returncode == 0, result.stderr
    refs = server_refs(project)
    assert refs["refs/heads/main"] == second and refs["refs/heads/topic"] == first
    tag_object = git(env, "rev-parse", "v1", cwd=work).stdout.strip()
    assert refs["refs/tags/v1"] == tag_object

    result = git(env, "fetch", "--quiet", "--tags", "origin", cwd=clone, check=False)
    assert result.returncode == 0, result.stderr
    assert git(env, "rev-parse", "origin/main", cwd=clone).stdout.strip() == second
    assert git(env, "cat-file", "-t", "v1", cwd=clone).stdout.strip() == "tag"

    # Force push (to a branch that is not the default: that one is protected) and delete.
    git(env, "checkout", "--quiet", "--orphan", "rewrite", cwd=work)
    forced = commit(env, work, "b.txt", "x\n", "rewritten")
    result = git(env, "push", "--force", remote, "rewrite:topic", cwd=work, check=False)
    assert result.returncode == 0, result.stderr
    assert "forced update" in result.stderr
    result = git(env, "push", remote, ":v1", cwd=work, check=False)
    assert result.returncode == 0, result.stderr
    refs = server_refs(project)
    assert refs["refs/heads/topic"] == forced and "refs/tags/v1" not in refs

    pushes = list(Push.objects.filter(repository=project).order_by("id"))
    assert len(pushes) == 4
    assert all(p.pusher == user and p.protocol == "http" for p in pushes)
    updates = [(u.ref, u.old, u.new) for u in RefUpdate.objects.filter(push=pushes[-2])]
    assert updates == [("refs/heads/topic", first, forced)]
    deleted = RefUpdate.objects.get(push=pushes[-1])
    assert deleted.ref == "refs/tags/v1" and deleted.old == tag_object and deleted.new == "0" * 40


def test_protocol_v2_is_used_for_fetch(live_server_url, alice, project, tmp_path, git_home):
    _user, token = alice
    work = tmp_path / "w"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    commit(git_home, work, "a", "a", "a")
    git(git_home, "push", url(live_server_url, "/alice/project.git", "alice", token), "main", cwd=work)
    env = {**git_home, "GIT_TRACE_PACKET": "1"}
    result = git(env, "-c", "protocol.version=2", "ls-remote", url(live_server_url, "/alice/project.git"))
    assert "git< version 2" in result.stderr
    assert "refs/heads/main" in result.stdout


def test_shallow_and_partial_clones(live_server_url, alice, project, tmp_path, git_home):
    _user, token = alice
    work = tmp_path / "w"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    for i in range(5):
        commit(git_home, work, f"f{i}.txt", f"content {i}\n" * 100, f"commit {i}")
    git(git_home, "push", url(live_server_url, "/alice/project.git", "alice", token), "main", cwd=work)
    public = url(live_server_url, "/alice/project.git")

    shallow = tmp_path / "shallow"
    result = git(git_home, "clone", "--quiet", "--depth=1", public, str(shallow), check=False)
    assert result.returncode == 0, result.stderr
    assert git(git_home, "rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "1"
    assert (shallow / ".git" / "shallow").exists()
    result = git(git_home, "fetch", "--quiet", "--deepen=2", cwd=shallow, check=False)
    assert result.returncode == 0, result.stderr
    assert git(git_home, "rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "3"

    partial = tmp_path / "partial"
    result = git(
        git_home, "clone", "--quiet", "--filter=blob:none", "--no-checkout", public, str(partial), check=False
    )
    assert result.returncode == 0, result.stderr
    missing = git(git_home, "rev-list", "--objects", "--missing=print", "HEAD", cwd=partial).stdout
    assert missing.count("\n?") + missing.startswith("?") >= 5  # blobs were not sent
    result = git(git_home, "checkout", "--quiet", "main", cwd=partial, check=False)  # fetches them lazily
    assert result.returncode == 0, result.stderr
    assert (partial / "f4.txt").read_text() == "content 4\n" * 100


def _web_worker_pids(master_pid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master_pid:
                pids.append(int(entry.name))
    return pids


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def test_200_mb_push_streams_without_growing_the_web_process(live_web, alice, project, tmp_path, git_home):
    import os
    import threading
    import time

    _user, token = alice
    work = tmp_path / "big"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    with open(work / "blob.bin", "wb") as fh:
        for _ in range(200):
            fh.write(os.urandom(1024 * 1024))
    env = {
        **git_home,
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "core.compression",
        "GIT_CONFIG_VALUE_0": "0",
        "GIT_CONFIG_KEY_1": "pack.compression",
        "GIT_CONFIG_VALUE_1": "0",
    }
    git(env, "add", "blob.bin", cwd=work)
    git(env, "commit", "--quiet", "-m", "200 MB", cwd=work)
    workers = _web_worker_pids(live_web.proc.pid)
    assert workers
    baseline = {pid: _rss_kib(pid) for pid in workers}
    peak = dict(baseline)
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            for pid in workers:
                peak[pid] = max(peak[pid], _rss_kib(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = git(
            env,
            "push",
            url(live_web.url, "/alice/project.git", "alice", token),
            "main",
            cwd=work,
            check=False,
        )
    finally:
        stop.set()
        sampler.join()
    assert result.returncode == 0, result.stderr
    growth_mib = max(peak[pid] - baseline[pid] for pid in workers) / 1024
    print(f"web worker RSS growth during a 200 MB push: {growth_mib:.1f} MiB")
    assert growth_mib < 100, f"RSS grew by {growth_mib:.1f} MiB"
    size = sum(p.stat().st_size for p in (project.disk_path / "objects").rglob("*") if p.is_file())
    assert size > 200 * 1024 * 1024


def _receive_packs_for(repo_path: Path) -> list[int]:
    needle = str(repo_path).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"receive-pack" in cmdline and needle in cmdline:
                found.append(int(entry.name))
    return found


def test_client_killed_mid_push_leaves_no_record_and_no_process(
    live_server_url, alice, project, tmp_path, git_home
):
    import os
    import signal

    _user, token = alice
    work = tmp_path / "w"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    with open(work / "blob.bin", "wb") as fh:
        for _ in range(300):
            fh.write(os.urandom(1024 * 1024))
    env = {
        **git_home,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.compression",
        "GIT_CONFIG_VALUE_0": "0",
    }
    git(env, "add", "blob.bin", cwd=work)
    git(env, "commit", "--quiet", "-m", "big", cwd=work)
    # Throttle the client's upload so it is surely mid-push when it dies.
    env_push = {
        **env,
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_1": "http.lowSpeedLimit",
        "GIT_CONFIG_VALUE_1": "0",
    }
    client_log = tmp_path / "client.log"
    with open(client_log, "wb") as log:
        client = subprocess.Popen(
            [
                "git",
                "-C",
                str(work),
                "push",
                url(live_server_url, "/alice/project.git", "alice", token),
                "main",
            ],
            env=env_push,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    # Generous: on a loaded machine the client may spend a while packing before it connects.
    wait_until(
        lambda: _receive_packs_for(project.disk_path),
        timeout=180,
        what=lambda: f"receive-pack to start; the client said: {client_log.read_text()}",
        alive=client,
    )
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    wait_until(
        lambda: _receive_packs_for(project.disk_path) == [],
        timeout=30,
        what=lambda: f"receive-pack to exit after its client died: {_receive_packs_for(project.disk_path)}",
    )
    assert not Push.objects.filter(repository=project).exists()
    assert "refs/heads/main" not in server_refs(project)
    # And the server still works.
    small = tmp_path / "small"
    git(git_home, "init", "--quiet", "-b", "main", str(small))
    commit(git_home, small, "a", "a", "a")
    result = git(
        git_home,
        "push",
        url(live_server_url, "/alice/project.git", "alice", token),
        "main",
        cwd=small,
        check=False,
    )
    assert result.returncode == 0, result.stderr
