"""The id guard against git itself: for generated `want` and `have` lines (padding, case,
whitespace, NUL, trailing garbage, truncation; SHA-1 and SHA-256 repositories), whatever object
git's own upload-pack resolves the line to is the object the guard read, and a line the guard
refuses is one git would not read as exactly that id. Runs with the git the settings name (CI
runs it again on the newer git it builds)."""

from __future__ import annotations

import functools
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitcore import fetchrequest, pktline
from gitcore.fetchrequest import BadLine
from gitcore.git import run_git
from gitcore.oids import SHA1, SHA256, ObjectFormat

FORMATS = {"sha1": SHA1, "sha256": SHA256}
BLOBS = 8


@functools.cache
def repository(name: str) -> tuple[Path, list[str], str]:
    """A bare repository of this format holding BLOBS distinct blobs and one commit on main;
    made once per process (hypothesis runs each example without function-scoped fixtures)."""
    root = Path(tempfile.mkdtemp(prefix=f"oid-{name}-"))
    path = root / "r.git"
    run_git(["init", "--quiet", "--bare", f"--object-format={name}", str(path)])
    blobs = [
        run_git(["hash-object", "-w", "--stdin"], repo=path, input=f"blob {n}\n".encode()).text.strip()
        for n in range(BLOBS)
    ]
    tree = run_git(["mktree"], repo=path, input=f"100644 blob {blobs[0]}\tf\n".encode()).text.strip()
    env = {
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@b",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@b",
    }
    commit = run_git(["commit-tree", tree, "-m", "one"], repo=path, env=env).text.strip()
    run_git(["update-ref", "refs/heads/main", commit], repo=path)
    return path, blobs, commit


def upload_pack(path: Path, body: bytes) -> bytes:
    return run_git(
        ["upload-pack", "--stateless-rpc", str(path)],
        env={"GIT_PROTOCOL": "version=2"},
        input=body,
        check=False,
    ).stdout


def packed_objects(path: Path, answer: bytes, fmt: ObjectFormat) -> set[str]:
    """The ids of the objects in the pack of a v2 fetch answer (side-band 1), read by git."""
    data = bytearray()
    for _raw, payload in pktline.iter_pkts(io.BytesIO(answer)):
        if payload and payload[:1] == b"\x01":
            data += payload[1:]
    if not data.startswith(b"PACK"):
        return set()
    with tempfile.TemporaryDirectory() as scratch:
        run_git(["init", "--quiet", "--bare", f"--object-format={fmt.name}", scratch])
        pack = Path(scratch) / "objects" / "pack" / "got.pack"
        pack.write_bytes(bytes(data))
        run_git(["index-pack", str(pack)], repo=scratch)
        listed = run_git(
            ["show-index", f"--object-format={fmt.name}"], input=pack.with_suffix(".idx").read_bytes()
        ).text
    return {line.split()[1] for line in listed.splitlines()}


def request(fmt: ObjectFormat, *args: bytes) -> bytes:
    # A SHA-256 repository serves clients that say they speak its format.
    return (
        pktline.encode("command=fetch\n")
        + pktline.encode(f"object-format={fmt.name}\n")
        + pktline.DELIM
        + b"".join(pktline.encode(a) for a in args)
        + pktline.FLUSH
    )


def guard(line: bytes, fmt: ObjectFormat) -> str | None:
    try:
        return fetchrequest.parse_line(line, fmt, v2=True)[1]
    except BadLine:
        return None


# What a line's id may be turned into: git reads the first hexsz characters and ignores the rest.
_JUNK = st.sampled_from([b"", b"0", b"0" * 24, b"f" * 24, b" ", b"\t", b"\r", b"\x00", b"\x00x", b"g", b"\n"])
_PREFIX = st.sampled_from([b"", b" ", b"0", b"\t"])


@st.composite
def id_texts(draw, fmt: ObjectFormat, ids: list[str]) -> bytes:
    oid = draw(st.sampled_from(ids))
    flips = draw(st.lists(st.integers(0, fmt.hexsz - 1), max_size=6))
    chars = list(oid)
    for i in flips:
        chars[i] = chars[i].upper()
    text = "".join(chars).encode()
    cut = draw(st.sampled_from([None, fmt.hexsz - 1, fmt.hexsz - 2, 40]))
    if cut is not None:
        text = text[:cut]
    return draw(_PREFIX) + text + draw(_JUNK) + draw(st.sampled_from([b"", b"\n"]))


@pytest.mark.parametrize("name", ["sha1", "sha256"])
def test_wants_mean_to_the_guard_what_they_mean_to_git(name):
    fmt = FORMATS[name]
    path, blobs, _commit = repository(name)

    seen: set[str] = set()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(id_texts(fmt, blobs))
    def check(text):
        line = b"want " + text
        read = guard(line, fmt)
        served = packed_objects(path, upload_pack(path, request(fmt, line, b"no-progress\n", b"done\n")), fmt)
        # A line the guard lets through is served by git as exactly the object the guard read
        # (and checked), or not at all when there is no such object; anything else is refused
        # before git runs, whatever git would make of it.
        if read is not None:
            assert served == ({read} & set(blobs)), (line, read, served)
        seen.add("served" if served else "not served")
        seen.add("read" if read else "refused")

    check()
    # The examples reached every case: lines the guard read and refused, objects git served
    # (for a line the guard refused too: padding) and lines git could not read.
    assert seen == {"served", "not served", "read", "refused"}, seen


@pytest.mark.parametrize("name", ["sha1", "sha256"])
def test_haves_mean_to_the_guard_what_they_mean_to_git(name):
    fmt = FORMATS[name]
    path, blobs, commit = repository(name)

    seen: set[str] = set()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(id_texts(fmt, [*blobs, commit]))
    def check(text):
        line = b"have " + text
        read = guard(line, fmt)
        answer = upload_pack(path, request(fmt, f"want {commit}\n".encode(), line))
        acked = {
            p[4:].strip().decode()
            for _r, p in pktline.iter_pkts(io.BytesIO(answer))
            if p and p.startswith(b"ACK ")
        }
        if read is not None:
            assert acked == ({read} & {*blobs, commit}), (line, read, acked)
        seen.add("acked" if acked else "not acked")
        seen.add("read" if read else "refused")

    check()
    assert seen == {"acked", "not acked", "read", "refused"}, seen


@pytest.mark.parametrize("name", ["sha1", "sha256"])
def test_v0_wants_with_capabilities_mean_to_the_guard_what_they_mean_to_git(name):
    fmt = FORMATS[name]
    path, _blobs, commit = repository(name)
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(id_texts(fmt, [commit]), st.sampled_from([b"", b" no-progress", b" ofs-delta no-progress"]))
    def check(text, capabilities):
        line = b"want " + text.rstrip(b"\n") + capabilities + b"\n"
        try:
            read = fetchrequest.parse_line(line, fmt, v2=False)[1]
        except BadLine:
            read = None
        caps = f" object-format={fmt.name}".encode() if fmt is SHA256 else b""
        body = pktline.encode(line.rstrip(b"\n") + caps + b"\n") + pktline.FLUSH + pktline.encode("done\n")
        answer = run_git(["upload-pack", "--stateless-rpc", str(path)], input=body, check=False).stdout
        served = b"PACK" in answer
        if read is not None:
            assert served == (read == commit), (line, read, answer[-200:])
        seen.add("served" if served else "not served")
        seen.add("read" if read else "refused")

    check()
    assert seen == {"served", "not served", "read", "refused"}, seen
