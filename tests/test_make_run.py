"""`make run` as a newcomer runs it: starts everything, serves the home page with the demo
repository, and Ctrl-C (SIGINT to the foreground process group) or SIGTERM to make stops
every process it started."""

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests import live

BASE_DIR = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.live
# Production-only variables are removed: `make run` is about the embedded defaults.
REMOVED = {
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "BUNDLE_STORAGE_URL",
    "S3_ENDPOINT_URL",
    "REPO_ROOT",
    "SECRET_KEY",
    "DEBUG",
    "CELERY_QUEUE",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
}


class MakeRun:
    def __init__(self, var_dir: Path, log: Path, extra_env: dict[str, str] | None = None):
        self.port = live.free_port()
        self.ssh_port = live.free_port()
        self.marker = f"HOSTSITE_SMOKE_{uuid.uuid4().hex}"
        env = {k: v for k, v in os.environ.items() if k not in REMOVED}
        env.update({"VAR_DIR": str(var_dir), "HOST": "127.0.0.1", "PORT": str(self.port), self.marker: "1"})
        env.update({"SSH_PORT": str(self.ssh_port), "SSH_LISTEN": "127.0.0.1"})
        env.update(extra_env or {})
        self.log_path = log
        self.log_file = open(log, "wb")  # noqa: SIM115 - closed in wait()
        # A session of its own, like a terminal's foreground job: killpg reaches make and
        # everything in its process group, as Ctrl-C does.
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            ["make", "--no-print-directory", "run"],
            cwd=BASE_DIR,
            env=env,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}/"

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout=180.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "hostsite is running at" in self.output():
                return time.monotonic() - self.started
            if self.proc.poll() is not None:
                break
            time.sleep(0.3)
        self.kill_everything()
        raise AssertionError(f"make run did not start:\n{self.output()[-6000:]}")

    def wait(self, timeout=60.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self.log_file.close()

    def kill_everything(self):
        for pid in live.processes_with_marker(self.marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def assert_nothing_left(run: MakeRun):
    deadline = time.monotonic() + 10
    left = live.processes_with_marker(run.marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = live.processes_with_marker(run.marker)
    if left:
        names = [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120] for pid in left]
        run.kill_everything()
        raise AssertionError(f"processes left behind: {names}")


def test_make_run_serves_and_stops_cleanly(tmp_path):
    var_dir = tmp_path / "var"
    first = MakeRun(var_dir, tmp_path / "first.log")
    first.wait_ready()
    with urllib.request.urlopen(first.url, timeout=10) as resp:
        page = resp.read().decode()
    assert resp.status == 200
    assert "hello-hostsite" in page, "the demo repository is listed on the home page"
    with urllib.request.urlopen(first.url + "demo/hello-hostsite", timeout=10) as resp:
        assert "Type greet() and run it as a script" in resp.read().decode()
    pids = live.processes_with_marker(first.marker)
    assert len(pids) >= 5  # make, supervisor, gunicorn master + workers, celery worker, beat
    if Path("/usr/sbin/sshd").exists():
        # sshd answers with the host key kept in VAR_DIR, and the banner names the SSH URL.
        assert "ssh: ssh://" in first.output() and f":{first.ssh_port}/" in first.output(), first.output()
        scan = subprocess.run(
            ["ssh-keyscan", "-t", "ed25519", "-p", str(first.ssh_port), "127.0.0.1"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        host_key = (var_dir / "ssh" / "ssh_host_ed25519_key.pub").read_text().split()[1]
        assert host_key in scan.stdout, (scan.stdout, scan.stderr)
    os.killpg(first.proc.pid, signal.SIGINT)  # Ctrl-C
    first.wait()
    assert_nothing_left(first)
    out = first.output()
    passwords = re.findall(r"password '([^']+)'", out)
    assert len(passwords) == 1, "the demo admin password is printed on the first run"
    assert (var_dir / "secret_key").stat().st_mode & 0o777 == 0o600

    # Second run: idempotent (no new demo user, same data) and stopped by SIGTERM to make alone.
    second = MakeRun(var_dir, tmp_path / "second.log")
    elapsed = second.wait_ready()
    assert "password '" not in second.output()
    with urllib.request.urlopen(second.url, timeout=10) as resp:
        assert "hello-hostsite" in resp.read().decode()
    os.kill(second.proc.pid, signal.SIGTERM)
    second.wait()
    assert_nothing_left(second)
    assert elapsed < 60, f"a second make run took {elapsed:.1f}s to serve"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError):
        return 0


def _running(pid: int) -> bool:
    """Exists and is not a zombie (an orphan's zombie waits for whoever reaps orphans here)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def worker_main(run: MakeRun) -> int | None:
    """The Celery worker's main process: the one `python -m hostsite.run` started."""
    pids = live.processes_with_marker(run.marker)
    for pid in pids:
        if "celery -A hostsite worker" in _cmdline(pid) and "hostsite.run" in _cmdline(_ppid(pid)):
            return pid
    return None


def test_make_run_restarts_a_killed_worker(tmp_path):
    run = MakeRun(tmp_path / "var", tmp_path / "run.log")
    run.wait_ready()
    try:
        first = worker_main(run)
        assert first is not None, run.output()[-4000:]
        pool = [pid for pid in live.processes_with_marker(run.marker) if _ppid(pid) == first]
        assert pool, "the worker has pool processes"
        # The web server answers before the worker is ready: kill a worker that was up.
        deadline = time.monotonic() + 60
        while run.output().count(" ready.") < 1 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert run.output().count(" ready.") == 1, run.output()[-4000:]

        answers: list[int] = []
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while "worker restarted" not in run.output() and time.monotonic() < deadline:
            with urllib.request.urlopen(run.url, timeout=10) as resp:  # the web server keeps serving
                answers.append(resp.status)
            time.sleep(0.2)
        out = run.output()
        assert f"worker (pid {first}) was killed by SIGKILL" in out, out[-4000:]
        assert "restarting it in 1s" in out
        assert answers and set(answers) == {200}
        second = worker_main(run)
        assert second not in (None, first)
        assert not any(_running(pid) for pid in pool), "the dead worker's pool went with it"
        deadline = time.monotonic() + 60
        while run.output().count(" ready.") < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert run.output().count(" ready.") >= 2, run.output()[-4000:]

        # Dying again right away doubles the wait.
        os.kill(second, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while "restarting it in 2s" not in run.output() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert f"worker (pid {second}) was killed by SIGKILL" in run.output()
        assert "restarting it in 2s" in run.output()
    finally:
        os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C still stops everything
        run.wait()
    assert_nothing_left(run)


def test_make_run_as_a_replica(tmp_path):
    """HOSTSITE_ROLE=replica beside a primary sharing VAR_DIR (database, broker, key, bundles):
    the web server and a worker consuming only `replica-<node>`; no beat, no sshd, no seeding;
    its copies in a directory of its own."""
    var_dir = tmp_path / "var"
    primary = MakeRun(var_dir, tmp_path / "primary.log", {"HOSTSITE_NODE": "p1"})
    primary.wait_ready()
    replica = MakeRun(
        var_dir,
        tmp_path / "replica.log",
        {"HOSTSITE_ROLE": "replica", "HOSTSITE_NODE": "r1", "PRIMARY_URL": primary.url},
    )
    try:
        replica.wait_ready()
        out = replica.output()
        assert f"hostsite is running at {replica.url} as replica r1" in out
        assert f"no git over SSH on a replica: pushes go to the primary ({primary.url.rstrip('/')})" in out
        assert f"copies in {var_dir / 'replicas' / 'r1'}" in out
        assert "password '" not in out, "a replica seeds nothing"
        with urllib.request.urlopen(replica.url, timeout=10) as resp:
            assert "hello-hostsite" in resp.read().decode(), "the shared database's repositories"
        commands = [_cmdline(pid) for pid in live.processes_with_marker(replica.marker)]
        workers = [c for c in commands if "celery -A hostsite worker" in c]
        assert workers and all("-Q replica-r1 " in c for c in workers), commands
        assert not [c for c in commands if " beat " in c or "sshd" in c or "ssh_gateway" in c], commands
        assert any("gunicorn" in c for c in commands), commands
    finally:
        os.killpg(replica.proc.pid, signal.SIGINT)
        replica.wait()
        os.killpg(primary.proc.pid, signal.SIGINT)
        primary.wait()
    assert_nothing_left(replica)
    assert_nothing_left(primary)


def test_make_run_replica_needs_the_primary_url(tmp_path):
    run = MakeRun(tmp_path / "var", tmp_path / "run.log", {"HOSTSITE_ROLE": "replica"})
    assert run.wait(120) != 0
    assert "hostsite: a replica needs PRIMARY_URL" in run.output()
    assert_nothing_left(run)
