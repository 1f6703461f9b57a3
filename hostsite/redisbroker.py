"""kombu's Redis transport with a heartbeat on unacknowledged messages.

kombu keeps a delivered, unacknowledged message in the `unacked` hash with its delivery time
in the `unacked_index` sorted set, and any consumer puts it back in its queue once that time
is older than `visibility_timeout`. Stock, that timeout must exceed the longest task (a 6-hour
import), so a task whose worker was SIGKILLed waited up to 6 hours. Here a live worker renews
the time of every message it holds (running, reserved, or waiting for its ETA) each
`unacked_restore_interval` seconds, so the timeout is a lease: a message of a dead worker is
back in its queue within `visibility_timeout` (CELERY_VISIBILITY_TIMEOUT, 300 s by default) of
the worker's last renewal, and a live worker's hour-long task is never handed to a second one.

The renewal runs in the worker's main process (the event loop of the prefork pool), which stays
responsive while pool processes run tasks; with `--pool solo` a long task would block it.
Clocks of the worker machines must agree to well within the timeout.
"""

from __future__ import annotations

import logging
from time import time

from kombu.transport import redis

log = logging.getLogger(__name__)


class QoS(redis.QoS):
    def restore_visible(self, start=0, num=10, interval=10):
        self.renew()
        return super().restore_visible(start=start, num=num, interval=interval)

    def renew(self) -> int:
        """Renew the lease of every message this consumer holds; how many were renewed."""
        # kombu fills both in QoS.__init__; its annotations say None.
        tags = [tag for tag in list(self._delivered) if tag not in self._dirty]  # type: ignore[call-overload,operator]
        if not tags:
            return 0
        now = time()
        with self.channel.conn_or_acquire() as client:
            # XX: only messages still unacknowledged; an ack racing this must not bring one back.
            client.zadd(self.unacked_index_key, dict.fromkeys(tags, now), xx=True)
        return len(tags)


class Channel(redis.Channel):
    QoS = QoS


class Transport(redis.Transport):
    Channel = Channel
