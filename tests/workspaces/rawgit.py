"""Requests to the live server's git endpoints written by hand, as an attacker writes them
(git's client would never send upper-case, padded or hidden ids): pkt-lines, smart HTTP posts
with or without a token, protocol v2 fetches and object-info, and an empty pack."""

from __future__ import annotations

import base64
import hashlib
import http.client
import struct

from gitcore import pktline

ZERO = "0" * 40
# An id no repository of the tests holds.
UNKNOWN = "d1e5" * 10


def pkt(text: str | bytes) -> bytes:
    return pktline.encode(text)


def empty_pack() -> bytes:
    header = b"PACK" + struct.pack(">II", 2, 0)
    return header + hashlib.sha1(header).digest()  # noqa: S324 - git's pack checksum


def post(world, service: str, body: bytes, *, who=None, v2: bool = False) -> tuple[int, bytes]:
    headers = {"Content-Type": f"application/x-git-{service}-request"}
    if v2:
        headers["Git-Protocol"] = "version=2"
    if who is not None:
        headers["Authorization"] = (
            "Basic " + base64.b64encode(f"{who.username}:{who.token}".encode()).decode()
        )
    conn = http.client.HTTPConnection(world.host, timeout=60)
    try:
        conn.request("POST", f"/{world.repo.full_name}.git/git-{service}", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def v2_request(command: str, *args: str | bytes) -> bytes:
    return pkt(f"command={command}\n") + pktline.DELIM + b"".join(pkt(a) for a in args) + pktline.FLUSH


def v2(world, command: str, *args: str | bytes, who=None) -> tuple[int, bytes]:
    return post(world, "upload-pack", v2_request(command, *args), who=who, v2=True)


def v2_fetch(world, oid: str, who=None) -> tuple[int, bytes]:
    return v2(world, "fetch", f"want {oid}\n", "done\n", who=who)


def object_info_request(*oids: str) -> bytes:
    return v2_request("object-info", "size\n", *(f"oid {oid}\n" for oid in oids))


def v2_object_info(world, oid: str, who=None) -> tuple[int, bytes]:
    return post(world, "upload-pack", object_info_request(oid), who=who, v2=True)


def v0(world, *parts: str | bytes, who=None) -> tuple[int, bytes]:
    """A protocol v0 upload-pack request: strings are pkt-lines, bytes go as they are."""
    body = b"".join(p if isinstance(p, bytes) else pkt(p) for p in parts)
    return post(world, "upload-pack", body, who=who)


def served_pack(status: int, body: bytes) -> bool:
    return status == 200 and b"PACK" in body


def normalized(body: bytes) -> list[bytes]:
    """An upload-pack answer as its lines and its pack's bytes: how git cuts the pack into
    side-band packets depends on when pack-objects' output is read, not on what it holds."""
    import io

    out: list[bytes] = []
    try:
        for raw, payload in pktline.iter_pkts(io.BytesIO(body)):
            if payload is not None and payload[:1] == b"\x01" and out and out[-1][:1] == b"\x01":
                out[-1] += payload[1:]
            else:
                out.append(payload if payload is not None else raw)
    except pktline.PktLineError:
        out.append(b"<not pkt-lines> " + body)
    return out
