"""gitcore.pktline and gitcore.fetchrequest directly: they parse hostile request bodies, so every
malformed length has its clear error, and no byte string makes them raise anything but their
own PktLineError."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitcore import fetchrequest
from gitcore.fetchrequest import BadLine
from gitcore.oids import SHA1, SHA256
from gitcore.pktline import (
    DELIM,
    FLUSH,
    MAX_PKT_LEN,
    RESPONSE_END,
    PktLineError,
    encode,
    iter_pkts,
    read_pkt,
    read_receive_commands,
    receive_capabilities,
)

OLD, NEW = "1" * 40, "2" * 40
WANT = "a" * 40


def _stream(*parts: bytes | str) -> io.BytesIO:
    return io.BytesIO(b"".join(p if isinstance(p, bytes) else encode(p) for p in parts))


# --- framing ---------------------------------------------------------------------------------------


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # 2 shared cores
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_round_trip(payloads):
    stream = io.BytesIO(b"".join(encode(p) for p in payloads))
    assert [payload for _raw, payload in iter_pkts(stream)] == payloads


def test_encode():
    assert encode("want x\n") == b"000bwant x\n"
    assert encode(b"") == b"0004"
    largest = b"x" * (MAX_PKT_LEN - 4)
    assert read_pkt(io.BytesIO(encode(largest))) == (encode(largest), largest)
    with pytest.raises(PktLineError, match="too long"):
        encode(largest + b"x")


@pytest.mark.parametrize("special", [FLUSH, DELIM, RESPONSE_END])
def test_special_packets(special):
    stream = io.BytesIO(special + encode("next"))
    assert read_pkt(stream) == (special, None)
    assert read_pkt(stream) == (b"0008next", b"next")
    with pytest.raises(EOFError):
        read_pkt(stream)  # a clean end between packets


def test_header_is_case_insensitive_hex():
    assert read_pkt(io.BytesIO(b"000Aabcdef")) == (b"000Aabcdef", b"abcdef")


@pytest.mark.parametrize(
    "header",
    [b"zzzz", b"00g0", b"0x10", b" 00a", b"+00a", b"-00a", b"00_a", b"\xff\xff\xff\xff", b"00\n0"],
)
def test_non_hex_length(header):
    with pytest.raises(PktLineError, match="invalid pkt-line length"):
        read_pkt(io.BytesIO(header + b"payload-payload"))


def test_length_below_the_header():
    # 0000-0002 are flush, delim and response-end; 0003 cannot even hold its own header.
    with pytest.raises(PktLineError, match="invalid pkt-line length 3"):
        read_pkt(io.BytesIO(b"0003abc"))


@pytest.mark.parametrize("header", [f"{MAX_PKT_LEN + 1:04x}".encode(), b"ffff"])
def test_length_too_long(header):
    with pytest.raises(PktLineError, match=f"invalid pkt-line length {int(header, 16)}"):
        read_pkt(io.BytesIO(header + b"x" * 70000))


@pytest.mark.parametrize("body", [b"0", b"000", b"0010", b"0010abc", b"0009abcd"])
def test_truncated(body):
    with pytest.raises(PktLineError, match="truncated pkt-line"):
        read_pkt(io.BytesIO(body))


def test_reads_through_short_reads():
    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes):
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            chunk, self.data = self.data[:1], self.data[1:]
            return chunk

    assert read_pkt(Trickle(encode("hello"))) == (b"0009hello", b"hello")


# --- upload-pack requests ------------------------------------------------------------------------


def validate_upload_request(body, *, protocol_v2: bool, fmt=SHA1):
    return fetchrequest.read(body, fmt, v2=protocol_v2)


def test_v0_request():
    body = _stream(f"want {WANT} multi_ack side-band-64k\n", f"want {'B' * 40}\n", FLUSH, "done\n")
    request = validate_upload_request(body, protocol_v2=False)
    assert request.values("want") == [WANT, "b" * 40]  # git's spelling
    assert [request.lines[i].as_sent for i in request.by_word["want"]] == [WANT, "B" * 40]


def test_v0_request_may_end_in_a_flush():
    validate_upload_request(_stream(f"want {WANT}\n", FLUSH, f"have {OLD}\n", FLUSH), protocol_v2=False)


def test_v2_request():
    body = _stream("command=fetch\n", "agent=git/2.39\n", DELIM, f"want {'c' * 64}\n", "done\n", FLUSH)
    request = validate_upload_request(body, protocol_v2=True, fmt=SHA256)
    assert request.command == "fetch" and request.values("want") == ["c" * 64]


@pytest.mark.parametrize(
    ("parts", "v2", "message"),
    [
        ((), False, "empty request"),
        ((f"want {WANT}\n",), False, "middle of the negotiation"),
        (("command=ls-refs\n",), True, "does not end with a flush-pkt"),
        (("command=ls-refs\n", DELIM), True, "does not end with a flush-pkt"),
        ((f"bogus {WANT}\n", FLUSH), False, "unexpected upload-pack line"),
    ],
)
def test_bad_upload_requests(parts, v2, message):
    with pytest.raises(PktLineError, match=message):
        validate_upload_request(_stream(*parts), protocol_v2=v2)


@pytest.mark.parametrize("word", ["want", "have", "shallow", "oid"])
@pytest.mark.parametrize(
    "oid",
    [
        "a" * 39,
        "a" * 41,
        "g" * 40,
        "a" * 63,
        "a" * 64,  # a SHA-256 length in a SHA-1 repository: git reads the first 40
        "a" * 40 + "0" * 24,
        "a" * 40 + "\0",
        "a" * 40 + "\r",
        "a" * 40 + "\t",
        " " + "a" * 40,
        "a" * 40 + " " + "b" * 40,
        "",
    ],
)
def test_ids_are_read_as_git_reads_them_or_refused(word, oid):
    with pytest.raises(BadLine):
        fetchrequest.parse_line(f"{word} {oid}\n".encode(), SHA1, v2=True)


def test_v0_wants_may_carry_capabilities_and_nothing_else_may():
    line = f"want {WANT.upper()} multi_ack_detailed ofs-delta\n".encode()
    assert fetchrequest.parse_line(line, SHA1, v2=False) == ("want", WANT, WANT.upper())
    with pytest.raises(BadLine):
        fetchrequest.parse_line(line, SHA1, v2=True)
    with pytest.raises(BadLine):
        fetchrequest.parse_line(f"have {WANT} common\n".encode(), SHA1, v2=False)


def test_a_sha256_repository_takes_exactly_64_digits():
    assert fetchrequest.parse_line(f"have {'D' * 64}\n".encode(), SHA256, v2=True) == (
        "have",
        "d" * 64,
        "D" * 64,
    )
    for oid in ("d" * 40, "d" * 65, "d" * 64 + "0"):
        with pytest.raises(BadLine):
            fetchrequest.parse_line(f"have {oid}\n".encode(), SHA256, v2=True)


def test_ref_names_are_kept_as_names():
    assert fetchrequest.parse_line(b"deepen-not main\n", SHA1, v2=True) == ("deepen-not", "main", "")
    assert fetchrequest.parse_line(b"want-ref refs/heads/x\n", SHA1, v2=True)[:2] == (
        "want-ref",
        "refs/heads/x",
    )
    for bad in (b"deepen-not \n", b"deepen-not a\x01b\n", b"want-ref \xff\n", b"deepen-not"):
        with pytest.raises(BadLine):
            fetchrequest.parse_line(bad, SHA1, v2=True)


def test_a_request_with_some_lines_rewritten():
    body = _stream("command=fetch\n", DELIM, f"want {WANT}\n", f"have {OLD}\n", f"have {NEW}\n", FLUSH)
    request = validate_upload_request(body, protocol_v2=True)
    first, second = request.by_word["have"]
    expected = _stream("command=fetch\n", DELIM, f"want {WANT}\n", f"have {'0' * 40}\n", FLUSH).getvalue()
    assert request.rewritten({first: encode(f"have {'0' * 40}\n"), second: None}) == expected


# --- receive-pack requests -----------------------------------------------------------------------


def test_receive_commands_and_capabilities():
    head = f"{OLD} {NEW} refs/heads/main\0report-status side-band-64k\n"
    commands = _stream(head, f"{NEW} {'0' * 40} refs/heads/old\n", FLUSH).getvalue()
    stream = io.BytesIO(commands + b"PACK...")
    raw, parsed = read_receive_commands(stream)
    assert raw == commands
    assert parsed == [(OLD, NEW, "refs/heads/main"), (NEW, "0" * 40, "refs/heads/old")]
    assert stream.read() == b"PACK..."  # the pack stays in the stream
    assert receive_capabilities(raw) == {"report-status", "side-band-64k"}


def test_receive_skips_certificates_and_shallow_lines():
    body = _stream(
        "push-cert\0report-status\n",
        "certificate version 0.1\n",
        f"{OLD} {NEW} refs/heads/in-cert\n",
        "push-cert-end\n",
        f"shallow {OLD}\n",
        f"{OLD} {NEW} refs/heads/main\n",
        FLUSH,
    )
    raw, parsed = read_receive_commands(body)
    assert parsed == [(OLD, NEW, "refs/heads/main")]
    assert receive_capabilities(raw) == {"report-status"}


def test_probe_is_a_bare_flush():
    assert read_receive_commands(io.BytesIO(FLUSH)) == (FLUSH, [])
    with pytest.raises(PktLineError, match="no commands"):
        read_receive_commands(io.BytesIO(FLUSH + b"more"))


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ((), "ends before the command list's flush-pkt"),
        ((f"{OLD} {NEW} refs/heads/main\n",), "ends before the command list's flush-pkt"),
        ((f"{OLD} {NEW} refs/heads/main\n", DELIM), "unexpected special packet"),
        ((f"{OLD} {NEW}\n", FLUSH), "malformed command"),
        ((f"{'a' * 64} {NEW} refs/heads/x\n", FLUSH), "malformed command"),  # not SHA-1
        ((f"{OLD} {NEW} \n", FLUSH), "malformed command"),
        (("push-cert\0\n", FLUSH), "unexpected special packet"),
    ],
)
def test_bad_receive_requests(parts, message):
    with pytest.raises(PktLineError, match=message):
        read_receive_commands(_stream(*parts))


def test_receive_command_list_limit():
    body = _stream(*[f"{OLD} {NEW} refs/heads/b{i}\n" for i in range(100)], FLUSH)
    with pytest.raises(PktLineError, match="too long"):
        read_receive_commands(body, limit=1000)


# --- fuzz -----------------------------------------------------------------------------------------

# Bodies that look like pkt-lines often enough to get past the first header.
_PKT_PIECES = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([FLUSH, DELIM, RESPONSE_END, b"0003", b"fff1", b"000g", b"0004"]),
    st.binary(max_size=80).map(encode),
    st.sampled_from([f"want {WANT}\n", f"{OLD} {NEW} refs/heads/x\0caps\n", "done\n", "push-cert\n"]).map(
        encode
    ),
)
_BODIES = st.one_of(st.binary(max_size=2000), st.lists(_PKT_PIECES, max_size=20).map(b"".join))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_BODIES, st.booleans())
def test_fuzz_raises_only_pktline_errors(body, v2):
    for parse in (
        lambda s: validate_upload_request(s, protocol_v2=v2),
        lambda s: validate_upload_request(s, protocol_v2=v2, fmt=SHA256),
        lambda s: list(iter_pkts(s)),
        read_receive_commands,
        lambda s: receive_capabilities(s.getvalue()),
    ):
        # PktLineError is the one error the views answer 400; anything else fails the test.
        with contextlib.suppress(PktLineError):
            parse(io.BytesIO(body))
