"""Smart HTTP request bodies, checked before git sees them: the pkt-line framing of an
upload-pack request and of a push's command list, and the inflated size of a gzip body (spooled
to a temporary file, so a gzip bomb gets a clear 413 rather than a broken 200)."""

from __future__ import annotations

import tempfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, cast

from django.conf import settings

from gitcore import fetchrequest, pktline
from gitcore.fetchrequest import FetchRequest
from gitcore.gitstream import CHUNK
from gitcore.oids import ObjectFormat
from repos.clientbody import ClientBody
from repos.gitprotocol import GitHTTPError, wants_v2


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
    fetch: FetchRequest | None = None  # an upload-pack request, line by line


def prepare_body(
    service: str, raw: BinaryIO, *, gzip: bool, protocol: str | None, fmt: ObjectFormat
) -> PreparedBody:
    """Validate a request body before git sees it; ids are read for the repository's format."""
    raw = cast(BinaryIO, ClientBody(raw))  # a body that cannot be read is a 400 (repos.clientbody)
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
            fetch = fetchrequest.read(body, fmt, v2=wants_v2(protocol))
            body.seek(0)
            return PreparedBody(b"", body, [], fetch)
        prefix, commands = pktline.read_receive_commands(raw, fmt)
        return PreparedBody(prefix, raw, commands)
    except pktline.PktLineError as exc:
        raise GitHTTPError(400, f"malformed request: {exc}") from None
