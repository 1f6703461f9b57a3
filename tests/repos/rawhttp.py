"""Requests written by hand for the live server, where git's client or urllib would not send
them: chunked bodies with broken framing, bodies shorter than their Content-Length. And what a
server logged meanwhile."""

from __future__ import annotations

import http.client
import socket


def send(base: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    """One request as raw bytes: the headers, then `body` as it is (its chunks written by
    hand, unless the headers give a Content-Length), then the end of what the client sends."""
    host, port = base.removeprefix("http://").split(":")
    framing = "" if "Content-Length" in headers else "Transfer-Encoding: chunked\r\n"
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{framing}"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(head.encode() + body)
        sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


# What follows a well-framed first chunk: each breaks the chunked encoding in its own way.
BROKEN = {
    "size zz": b"zz\r\n0000\r\n0\r\n\r\n",
    "negative size": b"-1\r\nx\r\n0\r\n\r\n",
    "overflowing size": b"ffffffffffffffffffffffff\r\n0000",
    "size line with no end": b"1" * 9000,
    "bad chunk extension": b"4;=\r\n0000\r\n0\r\n\r\n",
    "missing CRLF after a chunk": b"4\r\n0000XX0\r\n\r\n",
    "bad trailer": b"0\r\nno colon here\r\n\r\n",
    "cut short": b"10\r\n0000",
    "no last chunk": b"",
}


class LogTail:
    """What a server logged since it was made."""

    def __init__(self, web):
        self.path = web.log_path
        self.start = self.path.stat().st_size

    def text(self) -> str:
        with open(self.path, "rb") as fh:
            fh.seek(self.start)
            return fh.read().decode("utf-8", "replace")

    def clean(self) -> bool:
        text = self.text()
        return "Traceback" not in text and "Internal Server Error" not in text
