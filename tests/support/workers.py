"""One real Celery worker per test module, lent to each test that asks for one.

Starting a worker costs ~4 CPU-seconds (Django and the tasks imported) and a warm stop several
seconds more; started per test, that was a large share of the suite's CPU. A lent worker must
still look fresh to the test: it consumes the session's queue only while a test holds it
(Celery's add_consumer/cancel_consumer, answered by the worker before they return), so tasks a
test's earlier fixtures queued are purged unseen, no task runs between tests, and tests that
start their own worker on that queue meet no competitor. When a test ends, the worker stops
consuming and the test waits for its running task to finish before the test's database flush,
as a warm stop did; what it had taken but not started (prefetched, or waiting for its ETA) is
revoked, never run, as a warm stop handed it back to a queue the next test purges. A worker that does
not answer, or is not idle in time, is stopped and the next test gets a new one: never a
worker holding an earlier test's work. Each test reads only its own part of the log.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from tests import live

# A remote-control round trip is a few tenths of a second on the filesystem broker.
CONTROL_TIMEOUT = 10.0
# How long a test's last running task may take to finish at its end.
SETTLE_TIMEOUT = 30.0
# The worker registers its node as it starts, inside the test that asked for it (whose flush
# removes the row); its heartbeat must not write the row again between tests, where a later
# test would find a node it never made. No test of a lent worker reads its heartbeats.
QUIET_HEARTBEAT_SECONDS = 24 * 3600


class LentWorker:
    """What a test sees: the worker process, and only the log written since it was lent."""

    def __init__(self, worker: live.ManagedProcess):
        self.worker = worker
        self.proc = worker.proc
        self.offset = worker.log_path.stat().st_size if worker.log_path else 0

    @property
    def pid(self) -> int:
        return self.worker.pid

    def poll(self) -> int | None:
        return self.worker.poll()

    def log(self, limit: int | None = 8000) -> str:
        if self.worker.log_path is None:
            return ""
        with self.worker.log_path.open("rb") as f:
            f.seek(self.offset)
            text = f.read().decode(errors="replace")
        return text if limit is None else text[-limit:]

    def logged(self, text: str) -> bool:
        return text in self.log(limit=None)

    def stop(self) -> None:
        self.worker.stop()


class WorkerLender:
    """The module's worker: started on first use, lent per test, stopped with the module."""

    def __init__(self, env: dict[str, str], queue: str, log_dir: Path):
        self.env = env
        self.queue = queue
        self.log_dir = log_dir
        self.worker: live.ManagedProcess | None = None
        self.hostname = ""

    def lend(self) -> LentWorker:
        from hostsite.celery import app

        # What earlier fixtures of this test queued is dropped, as it was before a fresh worker.
        live.empty_queues(self.queue)
        if self.worker is not None and self.worker.poll() is None:
            replies = app.control.add_consumer(
                self.queue, destination=[self.hostname], reply=True, timeout=CONTROL_TIMEOUT
            )
            if self._answered(replies):
                return LentWorker(self.worker)
        self._replace()
        assert self.worker is not None
        return LentWorker(self.worker)

    def take_back(self) -> None:
        """Stop consuming, then let the worker finish what it holds; or stop it."""
        from hostsite.celery import app

        if self.worker is None or self.worker.poll() is not None:
            return
        replies = app.control.cancel_consumer(
            self.queue, destination=[self.hostname], reply=True, timeout=CONTROL_TIMEOUT
        )
        if not (self._answered(replies) and self._settled(app)):
            self.stop()

    def stop(self) -> None:
        if self.worker is not None:
            # Warm: a killed worker's unacknowledged messages would come back to the queue.
            self.worker.stop()
            self.worker = None

    def _replace(self) -> None:
        self.stop()
        live.empty_queues(self.queue)
        # A name of its own, so remote control reaches this worker and no earlier one.
        self.hostname = f"test-{os.getpid()}-{uuid.uuid4().hex[:8]}@suite"
        logs = self.log_dir / self.hostname.split("@", 1)[0]
        logs.mkdir(parents=True)
        self.worker = live.start_worker(
            {**self.env, "NODE_HEARTBEAT_SECONDS": str(QUIET_HEARTBEAT_SECONDS)},
            logs,
            queue=self.queue,
            hostname=self.hostname,
        )

    def _answered(self, replies) -> bool:
        return any(self.hostname in reply for reply in replies or [])

    def _settled(self, app) -> bool:
        """Wait for the running task to end; tasks taken but not started (prefetched, or
        waiting for an ETA) are revoked, so they never run: a warm stop left them to be purged."""
        deadline = time.monotonic() + SETTLE_TIMEOUT
        inspect = app.control.inspect(destination=[self.hostname], timeout=CONTROL_TIMEOUT)
        revoked: set[str] = set()
        while time.monotonic() < deadline:
            active, reserved, scheduled = inspect.active(), inspect.reserved(), inspect.scheduled()
            if active is None or reserved is None or scheduled is None:
                return False
            waiting = {task["id"] for tasks in reserved.values() for task in tasks}
            waiting |= {task["request"]["id"] for tasks in scheduled.values() for task in tasks}
            if waiting - revoked:
                replies = app.control.revoke(
                    sorted(waiting - revoked),
                    destination=[self.hostname],
                    reply=True,
                    timeout=CONTROL_TIMEOUT,
                )
                if not self._answered(replies):
                    return False
                revoked |= waiting
            if not any(active.values()):
                return True
            time.sleep(0.1)
        return False
