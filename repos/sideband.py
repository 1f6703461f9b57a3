"""Reading receive-pack's side-band response as it streams to the client.

receive-pack runs index-pack or unpack-objects with the object checks (repos.objectcheck); what
they print reaches the client on side-band 2, in pieces of at most 128 bytes (receive-pack's
copy_to_sideband), so one line may span several packets and one chunk of git's stdout may end
in the middle of a packet. `FsckRelay` follows the pkt-lines across chunks and band-2 text
across packets, and:

- collects every fsck message (accepted legacy objects are recorded after the push);
- right after git's line for a refused object (`error: object <oid>: hasDotgit: ...`), adds a
  band-2 packet `hostsite: object <oid> refused by the hasDotgit check: <why, what to do>`,
  so the client prints it as `remote: hostsite: ...` under git's own line;
- holds back a flush-pkt that ends a chunk until more output follows: receive-pack's last
  packet is that flush, and `finish(note)` can still send a note (the push's record is
  delayed) before it, while the client is listening.

Everything else is relayed as it arrived, packet for packet. Only an incomplete packet is held
back, until the rest of it arrives (at most one pkt-line, 64 KiB). Bytes that are not pkt-lines
switch the relay to passing everything through unchanged: it never raises and never drops data.
"""

from __future__ import annotations

import re

from repos import objectcheck

MAX_PACKET = 65520  # side-band-64k (gitprotocol-pack(5))
FLUSH = b"0000"
# A line this long is no fsck message we could parse; keep the relay's memory bounded.
MAX_LINE = 64 * 1024
# Enough for record_legacy's own cap; a history with more is summarised by what was collected.
MAX_MESSAGES = 100_000
_PROGRESS = 2
_HEX = frozenset(b"0123456789abcdefABCDEF")
_LINE_END = re.compile(rb"[\r\n]")  # progress meters end their lines with \r


def negotiated(capabilities) -> bool:
    """Whether receive-pack will answer in side-band: it offers only `side-band-64k` (a client
    asking for plain `side-band` gets no side-band at all)."""
    return "side-band-64k" in capabilities


class FsckRelay:
    """Feed it git's stdout chunk by chunk; send what `feed` returns, then what `finish` returns."""

    def __init__(self, max_packet: int = MAX_PACKET, explain=objectcheck.explain):
        self.max_packet = max_packet
        self.messages: list[objectcheck.FsckMessage] = []
        self.passthrough = False  # set for good on the first byte that is not a pkt-line
        self._explain = explain
        self._held = b""  # an incomplete packet
        self._flush_held = False  # a flush-pkt that ended the output so far
        self._line = bytearray()  # band-2 text since the last line end
        self._explained: set[tuple[str, str]] = set()
        self._seen: set[tuple[str, str, str]] = set()

    def feed(self, chunk: bytes) -> bytes:
        if self.passthrough or not chunk:
            return chunk
        data = self._held + chunk if self._held else chunk
        out: list[bytes] = [FLUSH] if self._flush_held else []
        self._flush_held = False
        pos, end = 0, len(data)
        while pos + 4 <= end:
            header = data[pos : pos + 4]
            if not _HEX.issuperset(header):
                return self._give_up(out, data[pos:])
            length = int(header, 16)
            if length < 3:  # flush, delim, response-end: no payload
                out.append(header)
                pos += 4
                continue
            if length == 3 or length > MAX_PACKET:
                return self._give_up(out, data[pos:])
            if pos + length > end:
                break
            packet = data[pos : pos + length]
            pos += length
            if length > 4 and packet[4] == _PROGRESS:
                out.append(self._progress(packet))
            else:
                out.append(packet)
        self._held = data[pos:]
        if not self._held and out and out[-1] == FLUSH:
            out.pop()
            self._flush_held = True
        return b"".join(out)

    def finish(self, note: bytes = b"") -> bytes:
        """The end of git's output: anything held is relayed as it is, with `note` (a line for
        the client) on band 2 before the final flush-pkt. Without that flush (git died, or the
        output is not side-band) there is no place for a note and it is dropped."""
        held, self._held = self._held, b""
        if not self._flush_held:
            return held
        self._flush_held = False
        return held + b"".join(_packets(note, self.max_packet) if note else []) + FLUSH

    def _give_up(self, out: list[bytes], rest: bytes) -> bytes:
        self.passthrough = True
        self._held = b""
        out.append(rest)
        return b"".join(out)

    def _progress(self, packet: bytes) -> bytes:
        """A band-2 packet: itself, or itself split after each refused object's line with our
        explanation in between."""
        text = packet[5:]
        out: list[bytes] = []
        sent = start = 0  # text[:sent] is in `out`; text[:start] is in finished lines
        for match in _LINE_END.finditer(text):
            self._append(text[start : match.end()])
            start = match.end()
            explanation = self._line_done()
            if explanation:
                out.append(_band2(text[sent:start]))
                out.extend(_packets(explanation, self.max_packet))
                sent = start
        self._append(text[start:])
        if not out:
            return packet
        if sent < len(text):
            out.append(_band2(text[sent:]))
        return b"".join(out)

    def _append(self, text: bytes) -> None:
        if len(self._line) < MAX_LINE:
            self._line += text[: MAX_LINE - len(self._line)]

    def _line_done(self) -> bytes:
        line, self._line = bytes(self._line), bytearray()
        if b"object " not in line:
            return b""
        message = objectcheck.parse_line(line.decode("utf-8", "replace"))
        if message is None:
            return b""
        key = (message.level, message.oid, message.msg_id)
        if key not in self._seen and len(self.messages) < MAX_MESSAGES:
            self._seen.add(key)
            self.messages.append(message)
        if not message.refused or (message.oid, message.msg_id) in self._explained:
            return b""
        self._explained.add((message.oid, message.msg_id))
        return f"hostsite: {self._explain(message)}\n".encode()


def _band2(text: bytes) -> bytes:
    return f"{len(text) + 5:04x}".encode() + b"\2" + text


def _packets(text: bytes, max_packet: int) -> list[bytes]:
    room = max_packet - 5
    return [_band2(text[i : i + room]) for i in range(0, len(text), room)]
