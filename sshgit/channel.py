"""The SSH channel as the session sees it: sshd's pipes, passed to this process as fds 0, 1
and 2.

Reads return what has arrived (a pipe read), never wait to fill a buffer: the client sends a
request and then waits for the answer, so a read that waited for more would never return. A
reader can be stopped from another thread, which is how a request's feeder thread lets go of
the channel once git has finished with it (the client does not close its side after a push).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import tempfile
from collections.abc import Callable
from typing import BinaryIO, cast

from gitcore import pktline

CHUNK = 64 * 1024


_release: Callable[[int], None] | None = None


def on_release(callback: Callable[[int], None] | None) -> None:
    """How this process lets the client go before it exits (the gateway's child sets it)."""
    global _release
    _release = callback


def release(status: int) -> bool:
    """End the client's session now with `status`: fds 0-2 are pointed at /dev/null (sshd closes
    the channel when no process holds them) and the status goes to hostsite-shell. The process
    may go on with work the client need not wait for. False where that cannot be done."""
    if _release is None:
        return False
    callback = _release
    on_release(None)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    callback(status)
    return True


class ChannelReader:
    """A file-like reader of one fd that another thread can stop (reads then return b"")."""

    def __init__(self, fd: int):
        self.fd = fd
        self._stop_r, self._stop_w = os.pipe()
        self.eof = False

    def read(self, n: int = CHUNK) -> bytes:
        if self.eof or n <= 0:
            return b""
        ready, _, _ = select.select([self.fd, self._stop_r], [], [])
        if self._stop_r in ready:
            return b""
        data = os.read(self.fd, n)
        if not data:
            self.eof = True
        return data

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")

    def close(self) -> None:
        # The channel itself stays open (the session writes its answer there); only a request
        # body is "closed" by its consumer.
        pass

    def release(self) -> None:
        for fd in (self._stop_r, self._stop_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def splice_out(src: int, dst: int = 1, chunk: int = 1024 * 1024) -> int:
    """Move everything from the pipe `src` (git's stdout) to `dst` inside the kernel, without
    copying it through this process, until `src` ends; the bytes moved. git's output is most of
    a clone's bytes, and the client's index-pack wants the CPU more than we do."""
    total = 0
    while True:
        try:
            moved = os.splice(src, dst, chunk)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            # A destination splice cannot write to: copy instead.
            while data := os.read(src, chunk):
                write_all(dst, data)
                total += len(data)
            return total
        if moved == 0:
            return total
        total += moved


def read_request(reader: ChannelReader, *, limit: int) -> BinaryIO | None:
    """One protocol v2 request: pkt-lines up to and including its flush-pkt, spooled (memory up
    to 1 MiB). None when the client ends the session (a flush-pkt alone, or the channel's end)."""
    out = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - returned
    size = 0
    try:
        while True:
            try:
                raw, payload = pktline.read_pkt(cast(BinaryIO, reader))
            except EOFError:
                if size:
                    raise pktline.PktLineError("request ends before its flush-pkt") from None
                out.close()
                return None
            if payload is None and raw == pktline.FLUSH:
                if not size:
                    out.close()
                    return None
                out.write(raw)
                out.seek(0)
                return cast(BinaryIO, out)
            out.write(raw)
            size += len(raw)
            if size > limit:
                raise pktline.PktLineError(f"request larger than {limit // (1024 * 1024)} MiB")
    except BaseException:
        out.close()
        raise


def error_packet(message: str) -> bytes:
    """A protocol v2 `ERR` packet: git prints it as `remote error: <message>` and stops."""
    return pktline.encode(f"ERR {message}\n")
