"""hostsite.processes with real child processes: readiness, exit detection with the log tail,
stopping a whole process group, and the supervisor's restart backoff."""

import os
import sys
import time
from pathlib import Path

import pytest

from hostsite import processes
from tests.support.wait import wait_until

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
SERVER = (
    "import http.server as h, sys; "
    "h.test(h.SimpleHTTPRequestHandler, port=int(sys.argv[1]), bind='127.0.0.1')"
)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_wait_for_http_returns_once_the_child_serves(tmp_path):
    port = processes.free_port()
    child = processes.Child(
        "web", [PY, "-c", SERVER, str(port)], env=ENV, cwd=tmp_path, log_path=tmp_path / "web.log"
    )
    try:
        processes.wait_for_http(f"http://127.0.0.1:{port}/", watch=[child], timeout=30)
        assert child.poll() is None
    finally:
        child.stop(5)
    assert child.poll() is not None


def test_a_child_that_exits_fails_fast_with_its_log_tail(tmp_path):
    argv = [PY, "-c", "import sys; print('bad setting FOO'); sys.exit(3)"]
    child = processes.Child("web", argv, env=ENV, log_path=tmp_path / "web.log")
    t0 = time.monotonic()
    with pytest.raises(processes.StartupError) as exc:
        processes.wait_for_http(f"http://127.0.0.1:{processes.free_port()}/", watch=[child], timeout=30)
    assert time.monotonic() - t0 < 10
    assert "web exited with status 3" in str(exc.value)
    assert "bad setting FOO" in str(exc.value)
    child.stop(1)


def test_stop_kills_what_is_left_of_the_group(tmp_path):
    # The leader leaves a grandchild that ignores SIGTERM, as a worker pool process might.
    script = (
        "import os, signal, subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', "
        "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    child = processes.Child("leader", [PY, "-c", script], env=ENV, log_path=tmp_path / "leader.log")
    wait_until(lambda: child.log().strip(), timeout=20, what="the leader to log its child's pid")
    grandchild = int(child.log().split()[0])
    assert _alive(grandchild)
    child.stop(2)
    wait_until(lambda: not _alive(grandchild), timeout=5, what="the stopped group's grandchild to exit")


def test_supervisor_restarts_with_doubling_backoff(tmp_path):
    said: list[str] = []
    sup = processes.Supervisor(env=ENV, say=said.append, backoff_first=0.2, backoff_max=0.3)
    sup.start("sleeper", [PY, "-c", "import time; time.sleep(60)"])
    sup.start("crasher", [PY, "-c", "import sys; sys.exit(2)"])
    try:
        sleeper = sup.children[0].pid
        deadline = time.monotonic() + 30
        while sum("restarting" in s for s in said) < 3 and time.monotonic() < deadline:
            sup.check()
            time.sleep(0.05)
        deaths = [s for s in said if "restarting" in s]
        assert "crasher" in deaths[0] and "exited with status 2" in deaths[0]
        assert [d.rsplit(" ", 1)[-1] for d in deaths[:3]] == ["0.2s", "0.3s", "0.3s"]
        assert any("crasher restarted" in s for s in said)
        assert sup.children[0].pid == sleeper, "the others carry on"
    finally:
        sup.stop(5)
    assert all(c.poll() is not None for c in sup.children)
