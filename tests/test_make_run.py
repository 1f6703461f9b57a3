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
REMOVED = {"DATABASE_URL", "CELERY_BROKER_URL", "BUNDLE_STORAGE_URL", "S3_ENDPOINT_URL", "REPO_ROOT",
           "SECRET_KEY", "DEBUG", "CELERY_QUEUE", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}


class MakeRun:
    def __init__(self, var_dir: Path, log: Path):
        self.port = live.free_port()
        self.marker = f"HOSTSITE_SMOKE_{uuid.uuid4().hex}"
        env = {k: v for k, v in os.environ.items() if k not in REMOVED}
        env.update({"VAR_DIR": str(var_dir), "HOST": "127.0.0.1", "PORT": str(self.port), self.marker: "1"})
        self.log_path = log
        self.log_file = open(log, "wb")  # noqa: SIM115 - closed in wait()
        # A session of its own, like a terminal's foreground job: killpg reaches make and
        # everything in its process group, as Ctrl-C does.
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            ["make", "--no-print-directory", "run"], cwd=BASE_DIR, env=env,
            stdout=self.log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
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
