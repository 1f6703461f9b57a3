"""One way for a test to wait for something another process does.

Every wait has a deadline and ends in a failure that says what was awaited: a poll that quietly
returns False lets the next assertion fail far from the cause, or not at all.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

T = TypeVar("T")


class Polled(Protocol):
    def poll(self) -> int | None: ...


class Supervised(Protocol):
    """A process wrapper such as tests.live.ManagedProcess: its Popen is `.proc`."""

    proc: subprocess.Popen


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float,
    interval: float = 0.05,
    what: str | Callable[[], str],
    alive: Polled | Supervised | None = None,
) -> T:
    """Poll `predicate` until it returns something truthy, and return that.

    `what` names the awaited condition in the failure; pass a callable to add a diagnostic read
    only on failure (a worker's log, the rows seen). `alive` is the process expected to bring
    the condition about: if it exits first, fail at once with its exit code instead of
    sleeping out the timeout.
    """
    process = getattr(alive, "proc", alive)
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if process is not None and (code := process.poll()) is not None:
            # The predicate may have become true just before the process exited.
            value = predicate()
            if value:
                return value
            raise AssertionError(f"process exited with code {code} while waiting for {_describe(what)}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g}s: {_describe(what)}")
        time.sleep(interval)


def _describe(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what
