"""Smart HTTP request bodies, checked before git sees them: the pkt-line framing of an
upload-pack request and of a push's command list, and the inflated size of a gzip body (spooled
to a temporary file, so a gzip bomb gets a clear 413 rather than a broken 200)."""

from __future__ import annotations

import tempfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, cast

from django.conf import settings

from repos import pktline
from repos.gitprotocol import GitHTTPError, wants_v2
from repos.gitstream import CHUNK


class GzipReader:
    """Inflate a gzip stream incrementally, refusing to produce more than `limit` bytes."""

    def __init__(self, raw: BinaryIO, limit: int):
        self._raw = raw
        self._limit = limit
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = b""
        self._produced = 0
        self._eof = False

    def read(self, n: int = CHUNK) -> bytes:
        while not self._buffer and not self._eof:
            data = self._inflater.unconsumed_tail or self._raw.read(CHUNK)
            if not data:
                self._eof = True
                if not self._inflater.eof:
                    raise GitHTTPError(400, "truncated gzip request body")
                break
            try:
                out = self._inflater.decompress(data, CHUNK)
            except zlib.error:
                raise GitHTTPError(400, "invalid gzip request body") from None
            self._produced += len(out)
            if self._produced > self._limit:
                raise GitHTTPError(
                    413, f"request body inflates to more than {self._limit // (1024 * 1024)} MiB"
                )
            self._buffer = out
            if self._inflater.eof:
                self._eof = True
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out


def spool(stream: BinaryIO | GzipReader, *, limit: int, what: str) -> BinaryIO:
    """Copy a stream into a temporary file (memory up to 1 MiB), at most `limit` bytes."""
    spooled = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - returned
    total = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            spooled.close()
            raise GitHTTPError(413, f"{what} is larger than {limit // (1024 * 1024)} MiB")
        spooled.write(chunk)
    spooled.seek(0)
    return cast(BinaryIO, spooled)


@dataclass(frozen=True)
class PreparedBody:
    prefix: bytes  # already read from the request, goes to git first
    rest: BinaryIO  # the remainder of the request body
    commands: list[tuple[str, str, str]]  # a push's (old, new, ref) commands


def prepare_body(service: str, raw: BinaryIO, *, gzip: bool, protocol: str | None) -> PreparedBody:
    """Validate a request body before git sees it."""
    if gzip:
        raw = spool(
            GzipReader(raw, settings.GIT_HTTP_MAX_INFLATED),
            limit=settings.GIT_HTTP_MAX_INFLATED,
            what="inflated request body",
        )
    try:
        if service == "upload-pack":
            body = (
                raw if gzip else spool(raw, limit=settings.GIT_HTTP_MAX_UPLOAD_REQUEST, what="fetch request")
            )
            pktline.validate_upload_request(body, protocol_v2=wants_v2(protocol))
            body.seek(0)
            return PreparedBody(b"", body, [])
        prefix, commands = pktline.read_receive_commands(raw)
        return PreparedBody(prefix, raw, commands)
    except pktline.PktLineError as exc:
        raise GitHTTPError(400, f"malformed request: {exc}") from None


def request_wants(body: BinaryIO) -> list[str]:
    """The ids a fetch asks for: its wants, and the objects an object-info asks about (their
    sizes say as much about hidden content as the objects do)."""
    try:
        ids = pktline.upload_wants(body)
        body.seek(0)
        ids += [
            payload[4:].strip().decode("ascii", "replace")
            for _raw, payload in pktline.iter_pkts(body)
            if payload is not None and payload.startswith(b"oid ")
        ]
        return ids
    finally:
        body.seek(0)
