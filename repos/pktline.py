"""pkt-line framing (gitprotocol-common(5)), validated before git sees a byte.

Every request body from the network is hostile. git would reject a malformed body too, but
only after the response has started with 200; validating the framing first lets us answer a
clear 400 and never start git for garbage.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import BinaryIO

FLUSH = b"0000"
DELIM = b"0001"  # protocol v2
RESPONSE_END = b"0002"  # protocol v2
MAX_PKT_LEN = 65520


class PktLineError(ValueError):
    pass


class InvalidWant(PktLineError):
    """A `want` line whose object id is not 40 (SHA-1) or 64 (SHA-256) hex digits."""


def encode(data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode()
    if len(data) + 4 > MAX_PKT_LEN:
        raise PktLineError("pkt-line too long")
    return f"{len(data) + 4:04x}".encode() + data


def read_pkt(stream: BinaryIO) -> tuple[bytes, bytes | None]:
    """Read one pkt-line: (raw bytes including the header, payload or None for special packets).

    Raises PktLineError on a bad header or a truncated packet, EOFError at a clean end.
    """
    header = _read_exactly(stream, 4, allow_eof=True)
    if header is None:
        raise EOFError
    try:
        length = int(header, 16)
    except ValueError:
        raise PktLineError(f"invalid pkt-line length {header!r}") from None
    if not all(c in b"0123456789abcdefABCDEF" for c in header):
        raise PktLineError(f"invalid pkt-line length {header!r}")
    if length in (0, 1, 2):
        return header, None
    if length < 4 or length > MAX_PKT_LEN:
        raise PktLineError(f"invalid pkt-line length {length}")
    payload = _read_exactly(stream, length - 4)
    return header + payload, payload  # type: ignore[operator]  # None only with allow_eof


def _read_exactly(stream: BinaryIO, n: int, allow_eof: bool = False) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            if allow_eof and not buf:
                return None
            raise PktLineError("truncated pkt-line")
        buf += chunk
    return bytes(buf)


def iter_pkts(stream: BinaryIO) -> Iterator[tuple[bytes, bytes | None]]:
    while True:
        try:
            yield read_pkt(stream)
        except EOFError:
            return


def validate_upload_request(stream: BinaryIO, *, protocol_v2: bool) -> None:
    """Check a whole upload-pack request body: well-framed, and complete.

    v0/v1: wants, optional shallow/deepen/filter lines, a flush, then haves and 'done' (a
    stateless request ends in a flush or in 'done'). v2: a command, capabilities, an optional
    delimiter with arguments, and a final flush.
    """
    seen_any = False
    last_special: bytes | None = None
    last_payload: bytes | None = None
    for raw, payload in iter_pkts(stream):
        seen_any = True
        if payload is None:
            last_special = raw
            last_payload = None
        else:
            last_special = None
            last_payload = payload
            if not protocol_v2 and payload.rstrip(b"\n").split(b" ", 1)[0] not in _V0_UPLOAD_WORDS:
                raise PktLineError(f"unexpected upload-pack line {payload[:40]!r}")
            if payload.startswith(b"want "):
                _want_oid(payload)
    if not seen_any:
        raise PktLineError("empty request")
    if protocol_v2:
        if last_special != FLUSH:
            raise PktLineError("request does not end with a flush-pkt")
    elif last_special != FLUSH and (last_payload or b"").rstrip(b"\n") != b"done":
        raise PktLineError("request ends in the middle of the negotiation")


def upload_wants(stream: BinaryIO) -> list[str]:
    """The object ids an upload-pack request wants, as sent (hex of either case).

    Raises InvalidWant for a want line that names no object id."""
    wants = []
    for _raw, payload in iter_pkts(stream):
        if payload is not None and payload.startswith(b"want "):
            wants.append(_want_oid(payload))
    return wants


def _want_oid(payload: bytes) -> str:
    # v0: `want <oid> <capabilities>` on the first line, `want <oid>` after; v2: `want <oid>`.
    oid = payload[5:].rstrip(b"\n").split(b" ", 1)[0]
    if len(oid) not in (40, 64) or not all(c in _HEX for c in oid):
        raise InvalidWant(f"invalid object id in want line {payload[:80]!r}")
    return oid.decode("ascii")


_HEX = frozenset(b"0123456789abcdefABCDEF")


_V0_UPLOAD_WORDS = {
    b"want",
    b"have",
    b"done",
    b"shallow",
    b"deepen",
    b"deepen-since",
    b"deepen-not",
    b"filter",
}


def read_receive_commands(
    stream: BinaryIO, *, limit: int = 8 * 1024 * 1024
) -> tuple[bytes, list[tuple[str, str, str]]]:
    """Read and check the command list of a receive-pack request, up to and including its
    flush-pkt. Returns those bytes (the pack data, if any, follows in the stream) and the
    (old, new, ref) of each command.

    Each command is `<old-oid> <new-oid> <ref>` (the first also carries capabilities after a
    NUL); push certificates and shallow lines may come among them.
    """
    out = bytearray()
    commands: list[tuple[str, str, str]] = []
    in_cert = False
    while True:
        try:
            raw, payload = read_pkt(stream)
        except EOFError:
            raise PktLineError("request ends before the command list's flush-pkt") from None
        out += raw
        if len(out) > limit:
            raise PktLineError("command list too long")
        if payload is None:
            if raw == FLUSH and not in_cert:
                break
            raise PktLineError("unexpected special packet in the command list")
        line = payload.split(b"\0", 1)[0].rstrip(b"\n")
        if in_cert:
            in_cert = line != b"push-cert-end"
            continue
        if line.startswith(b"push-cert"):
            in_cert = True
            continue
        if line.startswith(b"shallow "):
            continue
        parts = line.split(b" ")
        if len(parts) != 3 or not all(_is_oid(p) for p in parts[:2]) or not parts[2]:
            raise PktLineError(f"malformed command {line[:120]!r}")
        old, new, ref = (p.decode("utf-8", "replace") for p in parts)
        commands.append((old, new, ref))
    # git probes with a bare flush-pkt before streaming a large push (remote-curl's
    # probe_rpc, to settle authentication first): valid, and nothing may follow it.
    if not commands and (bytes(out) != FLUSH or stream.read(1)):
        raise PktLineError("no commands in the push")
    return bytes(out), commands


def receive_capabilities(commands: bytes) -> frozenset[str]:
    """The capabilities of a push: the words after the NUL of its first command (or of its
    push-cert line), read from the bytes read_receive_commands returned."""
    for _raw, payload in iter_pkts(io.BytesIO(commands)):
        if payload is not None and b"\0" in payload:
            words = payload.split(b"\0", 1)[1].rstrip(b"\n").split()
            return frozenset(word.decode("ascii", "replace") for word in words)
    return frozenset()


def _is_oid(value: bytes) -> bool:
    return len(value) in (40, 64) and all(c in b"0123456789abcdef" for c in value)
