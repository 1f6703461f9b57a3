"""The SSRF guard (repos.netguard) following redirects, in-process with
IMPORT_ALLOW_PRIVATE_SOURCES off.

The tests run a small HTTP(S) server on loopback that plays several hosts. The names resolve
(through the injected resolver, as DNS would) to documentation-free public addresses, and
connections to those addresses are routed to the loopback server: the guard's logic runs as it
would on the internet, only the wire is short.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading

import pytest

from repos import netguard
from repos.netguard import SourceRefused
from tests.repos.netnames import INTERNAL, NAMES, ORIGIN, OTHER, PUBLIC, SECRET, certificates, resolver


class Hosts:
    """Routes: (host, path) -> (status, location). Every request is recorded."""

    def __init__(self):
        self.routes: dict[tuple[str, str], tuple[int, str | None]] = {}
        self.seen: list[dict] = []


def _handler(hosts: Hosts):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            hosts.seen.append(
                {"host": host, "path": self.path, "authorization": self.headers.get("Authorization")}
            )
            status, location = hosts.routes.get((host, self.path.split("?")[0]), (404, None))
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            body = b"001e# service=git-upload-pack\n0000" if status == 200 else b""
            self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


@pytest.fixture
def hosts(monkeypatch, tmp_path):
    """One plain and one TLS server on loopback; PUBLIC addresses are routed to them."""
    hosts = Hosts()
    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hosts))
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(hosts))
    ca, cert, key = certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    tls.socket = context.wrap_socket(tls.socket, server_side=True)
    servers = {80: plain.server_address[1], 443: tls.server_address[1]}
    for server in (plain, tls):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    real_connect, real_context = socket.create_connection, ssl.create_default_context
    public = set(PUBLIC.values())

    def connect(address, *args, **kwargs):
        host, port = address
        if host in public:
            return real_connect(("127.0.0.1", servers[port]), *args, **kwargs)
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "create_connection", connect)
    monkeypatch.setattr(netguard.ssl, "create_default_context", lambda *a, **k: real_context(cafile=str(ca)))
    yield hosts
    for server in (plain, tls):
        server.shutdown()
        server.server_close()


INFO = "/info/refs"


def test_a_plain_source_is_probed_at_the_pinned_address(hosts):
    hosts.routes[(ORIGIN, "/x.git" + INFO)] = (200, None)
    source = netguard.prepare(f"http://{ORIGIN}/x.git", resolve=NAMES)
    assert source.url == f"http://{ORIGIN}/x.git" and hosts.seen[0]["host"] == ORIGIN
    assert ("http.curloptResolve", f"{ORIGIN}:80:93.184.216.34") in source.config


def test_a_redirect_to_a_private_address_is_refused(hosts):
    hosts.routes[(ORIGIN, "/a.git" + INFO)] = (
        302,
        "http://127.0.0.1:9/a.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/b.git" + INFO)] = (
        301,
        f"http://{INTERNAL}/b.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/c.git" + INFO)] = (307, "http://169.254.169.254/latest/info/refs")
    for name, private in (("a", "127.0.0.1"), ("b", "10.0.0.7"), ("c", "169.254.169.254")):
        with pytest.raises(SourceRefused, match=f"non-public address \\({private}\\)"):
            netguard.prepare(f"http://{ORIGIN}/{name}.git", resolve=NAMES)
    assert {seen["host"] for seen in hosts.seen} == {ORIGIN}


def test_credentials_follow_a_redirect_on_the_same_host_only(hosts):
    hosts.routes[(ORIGIN, "/moved.git" + INFO)] = (
        301,
        f"https://{ORIGIN}/new.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(ORIGIN, "/new.git" + INFO)] = (200, None)
    creds = netguard.Credentials("alice", SECRET)
    source = netguard.prepare(f"https://{ORIGIN}/moved.git", resolve=NAMES, credentials=creds)
    assert source.url == f"https://{ORIGIN}/new.git"
    assert source.secret_env["GIT_CONFIG_KEY_0"] == f"http.https://{ORIGIN}/new.git.extraHeader"
    assert all(seen["authorization"] == creds.basic() for seen in hosts.seen)

    hosts.seen.clear()
    hosts.routes[(ORIGIN, "/away.git" + INFO)] = (
        302,
        f"https://{OTHER}/away.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[(OTHER, "/away.git" + INFO)] = (200, None)
    source = netguard.prepare(f"https://{ORIGIN}/away.git", resolve=NAMES, credentials=creds)
    assert source.url == f"https://{OTHER}/away.git" and source.secret_env == {}
    assert ("http.curloptResolve", f"{OTHER}:443:93.184.216.35") in source.config
    assert [(s["host"], s["authorization"]) for s in hosts.seen] == [(ORIGIN, creds.basic()), (OTHER, None)]


def test_https_to_http_and_non_http_redirects_are_refused(hosts):
    hosts.routes[(ORIGIN, "/down.git" + INFO)] = (302, f"http://{ORIGIN}/down.git/info/refs")
    with pytest.raises(SourceRefused, match="from https to plain http"):
        netguard.prepare(f"https://{ORIGIN}/down.git", resolve=NAMES)
    for target in ("file:///etc/passwd", "ftp://other.example/x/info/refs", f"https://{OTHER}/login"):
        hosts.routes[(ORIGIN, "/odd.git" + INFO)] = (302, target)
        with pytest.raises(SourceRefused, match=r"not http|not a git repository"):
            netguard.prepare(f"https://{ORIGIN}/odd.git", resolve=NAMES)


def test_more_than_five_redirects_are_refused(hosts):
    for hop in range(7):
        hosts.routes[(ORIGIN, f"/r{hop}{INFO}")] = (302, f"/r{hop + 1}{INFO}")
    hosts.routes[(ORIGIN, f"/r7{INFO}")] = (200, None)
    with pytest.raises(SourceRefused, match="more than 5 times"):
        netguard.prepare(f"http://{ORIGIN}/r0", resolve=NAMES)
    assert netguard.prepare(f"http://{ORIGIN}/r2", resolve=NAMES).url == f"http://{ORIGIN}/r7"  # five hops


def test_missing_and_protected_sources_say_so(hosts):
    hosts.routes[(ORIGIN, "/private.git" + INFO)] = (401, None)
    with pytest.raises(SourceRefused, match="needs credentials"):
        netguard.prepare(f"http://{ORIGIN}/private.git", resolve=NAMES)
    with pytest.raises(SourceRefused, match="refused the credentials"):
        netguard.prepare(
            f"http://{ORIGIN}/private.git", resolve=NAMES, credentials=netguard.Credentials("a", "b")
        )
    with pytest.raises(SourceRefused, match=r"No repository at http://origin.example/none.git \(HTTP 404\)"):
        netguard.prepare(f"http://{ORIGIN}/none.git", resolve=NAMES)


def test_a_redirect_to_a_rebinding_name_is_probed_and_pinned_at_the_address_checked(hosts):
    """The hop's name answers a public address once, loopback after: the probe and git both use
    the one answer the check saw."""
    lookups = []

    def rebinding(host, port, **kwargs):
        if host != "rebind.example":
            return NAMES(host, port, **kwargs)
        lookups.append(host)
        return resolver({host: PUBLIC[host] if len(lookups) == 1 else "127.0.0.1"})(host, port)

    hosts.routes[(ORIGIN, "/hop.git" + INFO)] = (
        302,
        "http://rebind.example/hop.git/info/refs?service=git-upload-pack",
    )
    hosts.routes[("rebind.example", "/hop.git" + INFO)] = (200, None)
    source = netguard.prepare(f"http://{ORIGIN}/hop.git", resolve=rebinding)
    assert source.url == "http://rebind.example/hop.git" and lookups == ["rebind.example"]
    assert [seen["host"] for seen in hosts.seen] == [ORIGIN, "rebind.example"]
    assert ("http.curloptResolve", f"rebind.example:80:{PUBLIC['rebind.example']}") in source.config
