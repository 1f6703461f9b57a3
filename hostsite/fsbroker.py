"""kombu's filesystem transport with late acknowledgement that survives a dying worker.

kombu's own transport deletes a message file the moment a consumer fetches it, so a worker
killed with SIGKILL loses every task it had received, acks_late or not. Measured with real
Celery workers (bench/broker_redelivery.py, both transports in one run, late acks): when only
the pool process dies, both rerun the task (the live main process requeues it from memory);
when the whole worker dies, kombu's transport never runs it again (nothing in 30 s, and no
file is left to recover), this one reran it 2.9 and 5.6 s after the kill in two runs (the
second worker's start included). kombu's transport also writes a message in place rather
than renaming it into the queue. Hence this subclass, which changes only where a fetched
message waits for its ack and how a message is written. Here a fetched message
is renamed into a folder of its consumer process (`<processing_folder>/<pid>-<start>@<host>`)
and stays there until the task is acknowledged (the file is deleted), rejected without requeue
(deleted), or rejected with requeue or left unacknowledged at shutdown (renamed back into the
queue under its original name, so it is next). A folder whose process is gone (same host: no
process with that pid and start time) or has not renewed its lease (another host: the folder's
mtime, touched at every scan) is emptied back into the queue by any consumer: at its first
poll, so when a worker starts, and every `recover_interval` seconds after that.

Renames within one file system are atomic, so two consumers never both get a message, and a
crash at any point leaves each message either in the queue or in one processing folder.
Messages are written to a temporary name and renamed into the queue, so no consumer reads a
half-written file. A message can run twice (its worker died after the work, before the ack):
tasks are idempotent for that reason.

Settings: CELERY_BROKER_TRANSPORT = "hostsite.fsbroker:Transport", and transport options
`processing_folder`, `recover_interval` (seconds, default 10), `consumer_lease` (seconds,
default 300), next to kombu's `data_folder_in`/`data_folder_out`/`control_folder`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from queue import Empty
from time import monotonic, time

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, or None if it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def consumer_folder_name(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_time(pid) or 0}@{socket.gethostname()}"


def consumer_is_gone(name: str, mtime: float, *, lease: float) -> bool:
    """Whether the consumer a processing folder belongs to is gone for good."""
    ident, _, host = name.partition("@")
    pid, _, start = ident.partition("-")
    if host != socket.gethostname() or not pid.isdigit():
        return time() - mtime > lease
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return start not in ("", "0") and _start_time(int(pid)) != start


def recover_orphans(processing_root: str, queue_folder: str, *, lease: float = 300.0) -> int:
    """Move the messages of gone consumers back into the queue; the number moved."""
    try:
        folders = os.listdir(processing_root)
    except FileNotFoundError:
        return 0
    mine = consumer_folder_name()
    moved = 0
    for name in folders:
        path = os.path.join(processing_root, name)
        try:
            if name == mine or not consumer_is_gone(name, os.stat(path).st_mtime, lease=lease):
                continue
            files = os.listdir(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for filename in files:
            try:
                os.rename(os.path.join(path, filename), os.path.join(queue_folder, filename))
            except FileNotFoundError:
                continue  # another consumer recovered it first
            moved += 1
        with contextlib.suppress(OSError):  # not empty yet, or removed by another consumer
            os.rmdir(path)
    if moved:
        log.warning("broker: restored %d messages of workers that are gone to the queue", moved)
    return moved


class Channel(filesystem.Channel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._processing: dict[str, str] = {}  # delivery tag -> file in our processing folder
        self._no_ack_queues: set[str] = set()
        self._next_recovery = 0.0

    @property
    def processing_root(self) -> str:
        default = os.path.join(os.path.dirname(os.path.abspath(self.data_folder_in)), "processing")
        return self.transport_options.get("processing_folder") or default

    def _my_folder(self) -> str:
        # Per process, not per channel: the pid is what tells a live consumer from a dead one.
        path = os.path.join(self.processing_root, consumer_folder_name())
        os.makedirs(path, exist_ok=True)
        return path

    def _maybe_recover(self) -> None:
        now = monotonic()
        if now < self._next_recovery:
            return
        self._next_recovery = now + float(self.transport_options.get("recover_interval", 10))
        os.utime(self._my_folder())  # our lease, for consumers on other hosts
        recover_orphans(
            self.processing_root,
            self.data_folder_in,
            lease=float(self.transport_options.get("consumer_lease", 300)),
        )

    def basic_consume(self, queue, no_ack, *args, **kwargs):
        if no_ack:
            self._no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def _put(self, queue, payload, **kwargs):
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        # The temporary name does not end in ".<queue>.msg", so no consumer picks it up early.
        tmp = os.path.join(self.data_folder_out, f".{name}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(str_to_bytes(dumps(payload)))
            os.rename(tmp, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _get(self, queue):
        self._maybe_recover()
        wanted = f"{queue}.msg"
        no_ack = queue in self._no_ack_queues
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            held = os.path.join(self._my_folder(), name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), held)
            except FileNotFoundError:
                continue  # another consumer took it
            try:
                with open(held, "rb") as fh:
                    payload = loads(bytes_to_str(fh.read()))
                tag = payload["properties"]["delivery_tag"]
            except (OSError, ValueError, KeyError, TypeError):
                log.exception("broker: dropping unreadable message %s", name)
                os.remove(held)
                continue
            if no_ack:
                os.remove(held)  # remote control and broadcast messages are never acknowledged
            else:
                self._processing[tag] = held
            return payload
        raise Empty()

    def basic_ack(self, delivery_tag, multiple=False):
        super().basic_ack(delivery_tag, multiple=multiple)
        self._forget(delivery_tag)

    def basic_reject(self, delivery_tag, requeue=False):
        # With requeue, QoS.reject calls _restore_at_beginning, which renames the file back.
        super().basic_reject(delivery_tag, requeue=requeue)
        self._forget(delivery_tag)

    def _forget(self, delivery_tag) -> None:
        held = self._processing.pop(delivery_tag, None)
        if held is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(held)

    def _restore(self, message):
        """Requeue (reject with requeue, unacknowledged at shutdown): the held file goes back
        under its original name, so it is the next one delivered."""
        held = self._processing.pop(message.delivery_tag, None)
        if held is None:
            super()._restore(message)
            return
        # FileNotFoundError: already back in the queue, another consumer recovered it.
        with contextlib.suppress(FileNotFoundError):
            os.rename(held, os.path.join(self.data_folder_in, os.path.basename(held)))


class Transport(filesystem.Transport):
    Channel = Channel
    # Shares the filesystem transport's state, so both see the same exchanges and bindings.
    global_state = filesystem.Transport.global_state
