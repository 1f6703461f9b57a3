"""The heartbeat thread every Celery worker of every node runs (started on `worker_ready`):
it registers the node, checks its disk, and beats every NODE_HEARTBEAT_SECONDS; on a replica it
also runs the catch-up sweep (replication.catchup) at start and every CATCH_UP_SECONDS. Apart
from replication.nodes, which the sweep reads, so that the node's row and its sweep never
import each other."""

from __future__ import annotations

import logging
import threading
import time

from celery.signals import worker_ready
from django.conf import settings
from django.db import close_old_connections, connection

from replication import catchup
from replication.nodes import CATCH_UP_SECONDS, beat, check_disk, forget_live_replicas, is_replica, this_node

log = logging.getLogger(__name__)


def start_worker_node() -> None:
    """What a worker does once at start: register, check the disk, catch up (replicas)."""
    node = this_node(starting=True)
    check_disk(node)
    forget_live_replicas()
    if is_replica():
        catchup.catch_up()


class Heartbeat(threading.Thread):
    def __init__(self, interval: float | None = None) -> None:
        super().__init__(daemon=True, name="node-heartbeat")
        self.interval = interval or settings.NODE_HEARTBEAT_SECONDS
        self.stopped = threading.Event()

    def run(self) -> None:
        started = False
        next_sweep = time.monotonic() + CATCH_UP_SECONDS
        while not self.stopped.is_set():
            # A database that is down must not end the thread: it beats again when it is back.
            try:
                close_old_connections()
                if not started:
                    start_worker_node()
                    started = True
                else:
                    missed = beat()
                    if is_replica() and (missed or time.monotonic() >= next_sweep):
                        next_sweep = time.monotonic() + CATCH_UP_SECONDS
                        catchup.catch_up()
            except Exception:
                log.exception("node heartbeat failed")
            self.stopped.wait(self.interval)
        connection.close()

    def stop(self) -> None:
        self.stopped.set()


_heartbeat: Heartbeat | None = None


@worker_ready.connect
def _start_heartbeat(**_kwargs) -> None:
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = Heartbeat()
        _heartbeat.start()
