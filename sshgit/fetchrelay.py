"""The client's half of a stateful protocol v0 fetch over SSH, screened on its way to git.

Over SSH a v0 fetch is one conversation with one `git upload-pack`: the client sends its wants,
then rounds of haves, each round ending in a flush (or `done`), and git answers each round. git
reads ids leniently and answers haves for any object it holds, so each round is read here
first, exactly as smart HTTP reads a request (gitcore.fetchrequest, repos.fetchscreen): a
malformed line or a hidden want ends the conversation with git's own kind of answer, and
hidden haves and shallows name the null id when git reads them. A round is screened whole, so the backends are asked once per
round, not once per line.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
from pathlib import Path
from typing import BinaryIO, cast

from gitcore import fetchrequest, pktline
from gitcore.oids import ObjectFormat
from repos import fetchscreen
from repos.gitaccess import GitRequest
from repos.gitprotocol import GitHTTPError
from sshgit.channel import ChannelReader, error_packet, write_all


class FetchRelay(threading.Thread):
    """Copies screened rounds from the channel to git's stdin until the client is done. When it
    must refuse, it stops git and keeps the answer in `refusal` for the session to write once
    git's output has ended."""

    def __init__(
        self,
        req: GitRequest,
        proc: subprocess.Popen,
        reader: ChannelReader,
        *,
        fmt: ObjectFormat,
        hide_values: list[str],
        path: Path,
    ):
        super().__init__(daemon=True)
        self.req, self.proc, self.reader = req, proc, reader
        self.fmt, self.hide_values, self.path = fmt, hide_values, path
        self.refusal: bytes | None = None

    def run(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (pkts := self._round()) is not None:
                data = self._screen(pkts)
                if data is None:
                    return
                write_all(stdin.fileno(), data)
        except OSError:
            pass  # git ended first (it answered `done`, or died): nothing more to give it
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _round(self) -> list[tuple[bytes, bytes | None]] | None:
        """The pkt-lines up to the next flush or `done` (None: the client is gone)."""
        pkts: list[tuple[bytes, bytes | None]] = []
        while True:
            try:
                raw, payload = pktline.read_pkt(cast(BinaryIO, self.reader))
            except EOFError:
                return pkts or None
            except pktline.PktLineError as exc:
                self._refuse(error_packet(f"malformed request: {exc}"))
                return None
            pkts.append((raw, payload))
            if raw == pktline.FLUSH or (payload or b"").rstrip(b"\n") == b"done":
                return pkts

    def _screen(self, pkts: list[tuple[bytes, bytes | None]]) -> bytes | None:
        try:
            request = fetchrequest.collect(pkts, self.fmt, v2=False)
            screened = fetchscreen.screen(self.req, request, path=self.path, hide_values=self.hide_values)
        except pktline.PktLineError as exc:
            self._refuse(error_packet(f"malformed request: {exc}"))
            return None
        except GitHTTPError as exc:
            self._refuse(error_packet(exc.message))
            return None
        if screened.answer is not None:
            self._refuse(screened.answer)
            return None
        if screened.body is not None:
            with screened.body:
                return screened.body.read()
        return b"".join(raw for raw, _payload in pkts)

    def _refuse(self, answer: bytes) -> None:
        self.refusal = answer
        self.proc.kill()
