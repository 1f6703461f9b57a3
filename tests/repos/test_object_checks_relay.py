"""The side-band relay that explains index-pack's fsck lines under git's own (fuzzed): bytes
pass through unchanged, explanations fit a packet and come once."""

from __future__ import annotations

import random

from gitcore import pktline
from repos import objectcheck, sideband

OID = "a" * 40
OID2 = "b" * 40


def pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


def band2(text: str) -> bytes:
    return pkt(b"\2" + text.encode())


def status(*lines: str) -> bytes:
    inner = b"".join(pkt(line.encode()) for line in lines) + b"0000"
    return pkt(b"\1" + inner) + b"0000"


def relay_all(data: bytes, chunks: list[int] | None = None, **kwargs) -> tuple[bytes, sideband.FsckRelay]:
    relay = sideband.FsckRelay(**kwargs)
    out, pos = [], 0
    for size in chunks or [len(data)]:
        out.append(relay.feed(data[pos : pos + size]))
        pos += size
    out.append(relay.feed(data[pos:]))
    out.append(relay.finish())
    return b"".join(out), relay


def band2_text(body: bytes) -> str:
    text, pos = b"", 0
    while pos + 4 <= len(body):
        length = max(int(body[pos : pos + 4], 16), 4)
        if length > 4 and body[pos + 4] == 2:
            text += body[pos + 5 : pos + length]
        pos += length
    return text.decode()


REFUSED_LINE = f"error: object {OID}: hasDotgit: contains '.git'\n"
WARNED_LINE = f"warning: object {OID2}: zeroPaddedFilemode: contains zero-padded file modes\n"
# receive-pack relays index-pack's stderr in reads of at most 128 bytes: lines span packets.
SPLIT = (
    band2("Resolving deltas: 100% (3/3)\r")
    + band2(WARNED_LINE[:30])
    + band2(WARNED_LINE[30:] + "err")
    + band2(REFUSED_LINE[3:50])
    + band2(REFUSED_LINE[50:] + "fatal: fsck error in packed object\n")
    + status("unpack index-pack abnormal exit", "ng refs/heads/x unpacker error")
)


def test_the_relay_explains_a_refusal_right_under_gits_line():
    out, relay = relay_all(SPLIT)
    explained = "hostsite: " + objectcheck.explain(objectcheck.parse_line(REFUSED_LINE)) + "\n"
    assert band2_text(out) == (
        "Resolving deltas: 100% (3/3)\r"
        + WARNED_LINE
        + REFUSED_LINE
        + explained
        + "fatal: fsck error in packed object\n"
    )
    assert out.endswith(status("unpack index-pack abnormal exit", "ng refs/heads/x unpacker error"))
    assert [(m.level, m.msg_id) for m in relay.messages] == [
        ("warning", "zeroPaddedFilemode"),
        ("error", "hasDotgit"),
    ]


def test_any_chunking_gives_the_same_bytes_and_messages():
    rng = random.Random(12)
    whole, relay = relay_all(SPLIT)
    for _ in range(300):
        cuts = sorted(rng.sample(range(1, len(SPLIT)), rng.randint(1, 40)))
        sizes = [b - a for a, b in zip([0, *cuts], cuts, strict=False)]
        out, other = relay_all(SPLIT, sizes)
        assert out == whole and other.messages == relay.messages
    # one byte at a time
    assert relay_all(SPLIT, [1] * len(SPLIT))[0] == whole


def test_a_clean_response_and_a_warning_pass_through_byte_for_byte():
    clean = band2("Resolving deltas: 100% (3/3), done.\n") + band2(WARNED_LINE)
    clean += status("unpack ok", "ok refs/x")
    out, relay = relay_all(clean, [7, 3, 100])
    assert out == clean and [m.msg_id for m in relay.messages] == ["zeroPaddedFilemode"]


def test_an_explanation_fits_the_packet_size_and_is_given_once():
    data = band2(REFUSED_LINE) + band2(REFUSED_LINE) + b"0000"
    out, relay = relay_all(data, max_packet=64)
    text = band2_text(out)
    assert text.count("hostsite: ") == 1 and text.count(REFUSED_LINE) == 2 and len(relay.messages) == 1
    added = [p for p in packets(out) if p not in packets(data)]
    assert len(added) > 3 and all(len(p) <= 64 for p in added)


def packets(body: bytes) -> list[bytes]:
    found, pos = [], 0
    while pos < len(body):
        length = max(int(body[pos : pos + 4], 16), 4)
        found.append(body[pos : pos + length])
        pos += length
    return found


def test_garbage_passes_through_unchanged_and_never_raises():
    rng = random.Random(7)
    samples = [
        b"",
        b"zzzz" + band2(REFUSED_LINE),
        b"0003abc",
        b"fff0" + b"x" * 10,
        band2(REFUSED_LINE)[:-3],
        b"00",
        b"\x00\xff" * 50,
        b"0004" + b"0000" + b"0001",
        band2("\xff\xfe not utf-8 \n"),
    ]
    samples += [bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))) for _ in range(300)]
    alphabet = b"0123456789abcdef\1\2\n"  # mostly valid headers and band bytes
    samples += [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(300)]
    for data in samples:
        for sizes in ([len(data)], [1] * len(data), [rng.randint(1, 9) for _ in range(len(data))]):
            assert relay_all(data, sizes)[0] == data


def test_a_very_long_line_is_bounded_and_not_parsed():
    data = band2("x" * 60000) + band2("x" * 60000) + band2(f" object {OID}: hasDot: y\n")
    out, relay = relay_all(data)
    assert out == data and relay.messages == [] and len(relay._line) == 0


def test_the_capabilities_of_a_push():
    commands = pkt(f"{'0' * 40} {OID} refs/heads/x\0report-status side-band-64k agent=git/2.39\n".encode())
    second = pkt(f"{'0' * 40} {OID2} refs/heads/y\n".encode())
    capabilities = pktline.receive_capabilities(commands + second + b"0000")
    assert capabilities == {"report-status", "side-band-64k", "agent=git/2.39"}
    assert sideband.negotiated(capabilities) and not sideband.negotiated({"side-band", "report-status"})
    assert pktline.receive_capabilities(b"0000") == frozenset()
    assert pktline.receive_capabilities(pkt(f"shallow {OID}\n".encode()) + commands) == capabilities
