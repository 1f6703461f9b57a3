"""A small image host on loopback for the image proxy's tests: each path plays one kind of
upstream (a good PNG, HTML, a lying length, a slow body, redirects). Every request is recorded."""

from __future__ import annotations

import contextlib
import http.server
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from struct import pack


def png(width: int = 3, height: int = 2) -> bytes:
    """A real, decodable RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return pack(">I", len(data)) + kind + data + pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\xff\x00\x00" * width for _ in range(height))
    header = pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="90" height="20"><script>alert(1)</script><rect width="90" height="20" fill="#4c1"/></svg>'
BIG = 6 * 1024 * 1024


class ImageHost:
    def __init__(self):
        self.seen: list[dict] = []
        self.url = ""

    def __call__(self, path: str) -> str:
        return self.url + path


def _handler(host: ImageHost):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def send(self, status: int, content_type: str, body: bytes, length: int | None = -1, **headers):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if length is not None:
                self.send_header("Content-Length", str(len(body) if length == -1 else length))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.send_header("Connection", "close")
            self.end_headers()
            with contextlib.suppress(OSError):  # the proxy hung up: what a size cap does
                self.wfile.write(body)
            self.close_connection = True

        def do_GET(self):
            host.seen.append({"path": self.path, "headers": dict(self.headers.items())})
            path = self.path.split("?")[0]
            port = self.server.server_address[1]
            if path.endswith("/good.png"):
                self.send(200, "image/png; charset=binary", png())
            elif path.endswith("/badge.svg"):
                self.send(200, "image/svg+xml", SVG)
            elif path.endswith("/page.html"):
                self.send(200, "text/html", b"<html><script>alert(1)</script></html>")
            elif path.endswith("/fake.png"):
                self.send(200, "image/png", b"<html><script>alert(1)</script></html>")
            elif path.endswith("/big.png"):
                self.send(200, "image/png", png() + b"\0" * BIG)
            elif path.endswith("/big-unsized.png"):
                self.send(200, "image/png", png() + b"\0" * BIG, length=None)
            elif path.endswith("/big-lying.png"):
                self.send(200, "image/png", png() + b"\0" * BIG, length=len(png()) + 100)
            elif path.endswith("/short.png"):
                self.send(200, "image/png", png(), length=len(png()) + 1000)
            elif path.endswith("/gzip.png"):
                self.send(200, "image/png", png(), Content_Encoding="gzip")
            elif path.endswith("/slow.png"):
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()
                self.wfile.write(png())
                for _ in range(40):
                    time.sleep(0.25)
                    try:
                        self.wfile.write(b"\0")
                        self.wfile.flush()
                    except OSError:
                        return
                self.close_connection = True
            elif path.endswith("/slow-headers.png"):
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n")
                for i in range(40):
                    time.sleep(0.25)
                    try:
                        self.wfile.write(b"X-Drip-%d: x\r\n" % i)
                        self.wfile.flush()
                    except OSError:
                        return
                self.close_connection = True
            elif path.endswith("/to-good"):
                self.send(302, "text/plain", b"", Location="/x/good.png")
            elif path.endswith("/to-private"):
                self.send(302, "text/plain", b"", Location="http://10.0.0.1/good.png")
            elif path.endswith("/to-loopback"):
                self.send(302, "text/plain", b"", Location=f"http://127.0.0.2:{port}/x/good.png")
            elif path.endswith("/to-file"):
                self.send(302, "text/plain", b"", Location="file:///etc/passwd")
            elif path.endswith("/to-broken"):
                self.send(302, "text/plain", b"", Location="http://[broken/x.png")
            elif path.endswith("/loop"):
                self.send(302, "text/plain", b"", Location=self.path)
            else:
                self.send(404, "text/plain", b"no")

        def log_message(self, *args):
            pass

    return Handler


@contextmanager
def image_host() -> Iterator[ImageHost]:
    host = ImageHost()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(host))
    server.daemon_threads = True
    host.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()
