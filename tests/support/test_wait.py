"""wait_until: returns the value, or fails loudly and early; never returns False."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

from tests.support.wait import wait_until


def counter(ready_at: int):
    calls = []

    def predicate() -> list[int] | None:
        calls.append(1)
        return calls if len(calls) >= ready_at else None

    return predicate


def test_returns_the_predicates_truthy_value():
    value = wait_until(counter(3), timeout=5, interval=0.001, what="three calls")
    assert value == [1, 1, 1]


def test_a_timeout_raises_naming_what_was_awaited():
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"not within 0.2s: the moon"):
        wait_until(lambda: 0, timeout=0.2, interval=0.01, what="the moon")
    assert 0.2 <= time.monotonic() - started < 5


def test_a_callable_what_is_read_only_on_failure():
    reads = []

    def diagnostic() -> str:
        reads.append(1)
        return "worker log:\nboom"

    assert wait_until(lambda: "yes", timeout=1, what=diagnostic) == "yes"
    assert reads == []
    with pytest.raises(AssertionError, match="worker log:\nboom"):
        wait_until(lambda: "", timeout=0.05, interval=0.01, what=diagnostic)
    assert reads == [1]


def test_a_dead_process_fails_at_once_with_its_exit_code():
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    proc.wait()
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"exited with code 3 while waiting for the report"):
        wait_until(lambda: False, timeout=60, what="the report", alive=proc)
    assert time.monotonic() - started < 5


@dataclass
class Managed:
    proc: subprocess.Popen


def test_a_process_wrapper_is_watched_through_its_proc():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3); raise SystemExit(7)"])
    with pytest.raises(AssertionError, match="exited with code 7"):
        wait_until(lambda: None, timeout=60, what="never", alive=Managed(proc))


def test_a_condition_met_as_the_process_exits_still_counts():
    # The first look misses the condition, the process has exited by the time of the second.
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert wait_until(counter(2), timeout=5, what="the second look", alive=proc) == [1, 1]


def test_a_live_process_is_waited_on_until_the_condition_holds(tmp_path):
    marker = tmp_path / "done"
    script = f"import time; time.sleep(0.2); open({str(marker)!r}, 'w').close(); time.sleep(30)"
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        assert wait_until(marker.exists, timeout=30, what="the marker", alive=proc)
    finally:
        proc.kill()
        proc.wait()
