"""A counting HTTP proxy on loopback: which requests reach which server, with how many bytes
(and, per origin request, how much of the origin's CPU)."""

from __future__ import annotations

import contextlib
import socket
import threading


class CountingProxy:
    """An HTTP/1.1 proxy on loopback that forwards one request per connection (it sets
    `Connection: close`), routes `/bundles/*` to the bundle server and the rest to the origin,
    and records each request's method, path, status and bytes in both directions."""

    def __init__(self, origin_port: int, bundle_port: int, origin_cpu=None):
        self.origin_port = origin_port
        self.bundle_port = bundle_port
        # Called before and after each origin request: git's requests come one at a time, so
        # the difference is that request's CPU on the origin (its git processes are reaped
        # before gunicorn closes the connection).
        self.origin_cpu = origin_cpu
        self.lock = threading.Lock()
        self.records: list[dict] = []
        self.errors: list[str] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, name="proxy", daemon=True)
        self.thread.start()

    def take(self) -> list[dict]:
        with self.lock:
            records, self.records = self.records, []
        return records

    def stop(self) -> None:
        self.stopping = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(900)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = client.recv(65536)
                if not chunk or len(buf) > 1 << 20:
                    return
                buf += chunk
            head, rest = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            method, target = lines[0].split(b" ")[:2]
            path = target.decode("latin-1")
            headers = [h for h in lines[1:] if not h.lower().startswith((b"connection:", b"keep-alive:"))]
            accept = next((h.split(b":", 1)[1].strip().decode("latin-1") for h in headers
                           if h.lower().startswith(b"accept-encoding:")), "")  # fmt: skip
            backend = "bundles" if path.startswith("/bundles/") else "origin"
            port = self.bundle_port if backend == "bundles" else self.origin_port
            cpu0 = self.origin_cpu() if self.origin_cpu and backend == "origin" else None
            upstream = socket.create_connection(("127.0.0.1", port), timeout=900)
            upstream.sendall(b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n" + rest)
            sent_up = [len(buf)]

            def client_to_upstream() -> None:
                with contextlib.suppress(OSError):
                    while data := client.recv(1 << 16):
                        upstream.sendall(data)
                        sent_up[0] += len(data)
                with contextlib.suppress(OSError):
                    upstream.shutdown(socket.SHUT_WR)

            pump = threading.Thread(target=client_to_upstream, daemon=True)
            pump.start()
            down, resp_head = 0, b""
            while data := upstream.recv(1 << 18):
                if len(resp_head) < 65536 and b"\r\n\r\n" not in resp_head:
                    resp_head += data[:65536]
                client.sendall(data)
                down += len(data)
            cpu = self.origin_cpu() - cpu0 if cpu0 is not None else None
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
            pump.join(5)
            status_line, _, rest_head = resp_head.partition(b"\r\n")
            parts = status_line.split(b" ")
            encoding = next((h.split(b":", 1)[1].strip().decode("latin-1")
                             for h in rest_head.split(b"\r\n\r\n")[0].split(b"\r\n")
                             if h.lower().startswith(b"content-encoding:")), "")  # fmt: skip
            record = {
                "method": method.decode("latin-1"),
                "path": path,
                "backend": backend,
                "status": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None,
                "down": down,
                "up": sent_up[0],
                "accept_encoding": accept,
                "content_encoding": encoding,
                "origin_cpu_s": cpu,
            }
            with self.lock:
                self.records.append(record)
        except OSError as exc:
            with self.lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            for s in (client, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()
