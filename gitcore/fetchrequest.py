"""An upload-pack request (a clone, fetch, ls-refs or object-info), read line by line the way
git's upload-pack reads it, before git sees a byte.

Every line that names an object (`want`, `have`, `shallow`, and object-info's `oid`) is read
with the repository's object format (gitcore.oids): exactly one whole id, then the end of the
line; a v0 `want` may carry capabilities after a space. git reads the first 40 (or 64) digits
and ignores the rest, so anything else (padding, a second id, NUL, CR) is refused here with
400: what the visibility checks compare is then exactly what git will serve. Lines that name a
ref (`deepen-not`, `want-ref`) are kept as names, for the same checks against hidden refs.

Framing and completeness are checked too: a malformed body gets a clear 400 instead of a 200
that git breaks off.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO, cast

from gitcore import pktline
from gitcore.oids import ObjectFormat
from gitcore.pktline import FLUSH, PktLineError

ID_WORDS = {b"want": "want", b"have": "have", b"shallow": "shallow", b"oid": "oid"}
NAME_WORDS = {b"deepen-not": "deepen-not", b"want-ref": "want-ref"}
# What a protocol v0/v1 request may hold (gitprotocol-pack(5)).
V0_WORDS = frozenset(
    {b"want", b"have", b"done", b"shallow", b"deepen", b"deepen-since", b"deepen-not", b"filter"}
)


class BadLine(PktLineError):
    """A line that names an object or a ref in a way git would read differently."""


@dataclass(frozen=True)
class Line:
    """One pkt-line of the request: `raw` as sent (header included); `word` and `value` for the
    lines that name an object (value: the id in lower case) or a ref (value: the name)."""

    raw: bytes
    word: str = ""
    value: str = ""
    as_sent: str = ""  # the id's spelling in the request (object-info echoes it)


@dataclass
class FetchRequest:
    lines: list[Line]
    v2: bool
    command: str = "fetch"  # v2: the command= value; v0 requests are fetches
    by_word: dict[str, list[int]] = field(default_factory=dict)

    def values(self, word: str) -> list[str]:
        return [self.lines[i].value for i in self.by_word.get(word, ())]

    def ids(self) -> set[str]:
        return {self.lines[i].value for word in ID_WORDS.values() for i in self.by_word.get(word, ())}

    def rewritten(self, replace: dict[int, bytes | None]) -> bytes:
        """The request's bytes with the lines at these indexes replaced (None: left out)."""
        return b"".join(
            line.raw if i not in replace else (replace[i] or b"") for i, line in enumerate(self.lines)
        )


def parse_line(payload: bytes, fmt: ObjectFormat, *, v2: bool) -> tuple[str, str, str]:
    """(word, value, as_sent) of a line that names an object or a ref; ("", "", "") for any
    other line. Raises BadLine when such a line is not exactly what git would read."""
    text = payload[:-1] if payload.endswith(b"\n") else payload
    word, space, rest = text.partition(b" ")
    if word in ID_WORDS and space:
        as_sent = rest[: fmt.hexsz]
        after = rest[fmt.hexsz :]
        oid = fmt.parse(as_sent)
        # v0 wants carry capabilities after a space (git reads them from any want line).
        if oid is None or (after and not (not v2 and word == b"want" and after.startswith(b" "))):
            raise BadLine(f"{word.decode()} line does not name one {fmt.name} object id: {payload[:100]!r}")
        return ID_WORDS[word], oid, as_sent.decode("ascii")
    if word in NAME_WORDS and space:
        if not rest or any(c < 0x20 or c == 0x7F for c in rest):
            raise BadLine(f"{word.decode()} line does not name a ref: {payload[:100]!r}")
        try:
            return NAME_WORDS[word], rest.decode("utf-8"), ""
        except UnicodeDecodeError:
            raise BadLine(f"{word.decode()} line does not name a ref: {payload[:100]!r}") from None
    if word in ID_WORDS or word in NAME_WORDS:
        raise BadLine(f"{word.decode()} line without a value: {payload[:100]!r}")
    return "", "", ""


def collect(pkts: Iterable[tuple[bytes, bytes | None]], fmt: ObjectFormat, *, v2: bool) -> FetchRequest:
    """The request these pkt-lines make, each line checked (framing aside): a whole request, or
    one round of a stateful v0 negotiation."""
    request = FetchRequest(lines=[], v2=v2)
    for raw, payload in pkts:
        if payload is None:
            request.lines.append(Line(raw))
            continue
        if not v2 and payload.rstrip(b"\n").split(b" ", 1)[0] not in V0_WORDS:
            raise PktLineError(f"unexpected upload-pack line {payload[:40]!r}")
        if v2 and not request.lines and payload.startswith(b"command="):
            request.command = payload[len(b"command=") :].rstrip(b"\n").decode("ascii", "replace")
        word, value, as_sent = parse_line(payload, fmt, v2=v2)
        if word:
            request.by_word.setdefault(word, []).append(len(request.lines))
        request.lines.append(Line(raw, word, value, as_sent))
    return request


def read(stream: BinaryIO, fmt: ObjectFormat, *, v2: bool) -> FetchRequest:
    """Read and check a whole stateless request (smart HTTP's body, or one v2 request over SSH).

    v0/v1: wants, optional shallow/deepen/filter lines, a flush, then haves and `done` (it ends
    in a flush or in `done`). v2: a command, capabilities, an optional delimiter with
    arguments, and a final flush."""
    request = collect(pktline.iter_pkts(stream), fmt, v2=v2)
    if not request.lines:
        raise PktLineError("empty request")
    last = request.lines[-1].raw
    if v2:
        if last != FLUSH:
            raise PktLineError("request does not end with a flush-pkt")
    elif last != FLUSH and last[4:].rstrip(b"\n") != b"done":
        raise PktLineError("request ends in the middle of the negotiation")
    return request


def spooled(data: bytes) -> BinaryIO:
    """A rewritten request as the body git reads (memory up to 1 MiB, as the original)."""
    out = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - returned
    out.write(data)
    out.seek(0)
    return cast(BinaryIO, out)
