"""Webhook delivery connects to the address it checked (DNS rebinding), with
WEBHOOK_ALLOW_PRIVATE_TARGETS off.

The attacker's name is answered by a resolver standing in for their DNS server (at
socket.getaddrinfo, where every lookup of the process goes): a public address for the first
lookup, loopback for every one after. The "public" receiver is a server on loopback that
connections to the public address are routed to; the server's own network is a second receiver
on loopback, on the port the webhook's URL names. A delivery must reach the first and never
the second; over TLS, the certificate is verified for the name, and the Host header names it.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading

import pytest

from repos import webhooks
from repos.errors import InvalidInput
from repos.models import DeliveryStatus, Webhook, WebhookDelivery
from tests.factories import RepositoryFactory
from tests.repos.netnames import ORIGIN, PUBLIC, certificates

pytestmark = pytest.mark.django_db
REBIND = "rebind.example"


class Receiver:
    """A server on loopback that records the requests it gets (TLS with `context`) and gives
    each the same `answer` (status, Location)."""

    def __init__(self, context: ssl.SSLContext | None = None):
        self.requests: list[dict] = []
        self.answer: tuple[int, str | None] = (200, None)
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"host": self.headers["Host"], "path": self.path})
                status, location = receiver.answer
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.end_headers()
                self.wfile.write(b"thanks")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if context is not None:
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def network(monkeypatch, tmp_path, settings):
    """The internal receiver, the public stand-ins (plain and TLS) and the attacker's DNS."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    ca, cert, key = certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    internal, public, public_tls = Receiver(), Receiver(), Receiver(context)
    lookups: list[str] = []
    real_getaddrinfo, real_connect, real_context = (
        socket.getaddrinfo,
        socket.create_connection,
        ssl.create_default_context,
    )

    def getaddrinfo(host, port, *args, **kwargs):
        if host in (REBIND, ORIGIN, "loopback.example"):
            lookups.append(host)
            public_answer = host != "loopback.example" and (host == ORIGIN or len(lookups) == 1)
            address = PUBLIC[host] if public_answer else "127.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        host, port = address
        if host in PUBLIC.values():  # the wire to "the internet" is short
            return real_connect(
                ("127.0.0.1", public_tls.port if port == 443 else public.port), *args, **kwargs
            )
        return real_connect(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: real_context(cafile=str(ca)))
    yield {"internal": internal, "public": public, "public_tls": public_tls, "lookups": lookups}
    for receiver in (internal, public, public_tls):
        receiver.close()


def _delivery(url: str) -> WebhookDelivery:
    # The row as it was made while the name still looked innocent.
    hook = Webhook.objects.create(repository=RepositoryFactory(), url=url, secret="s")
    return WebhookDelivery.objects.create(webhook=hook, payload='{"event": "push"}')


def test_a_name_rebound_to_loopback_after_the_check_is_delivered_to_the_checked_address(network):
    internal = network["internal"]
    delivery = webhooks.attempt(_delivery(f"http://{REBIND}:{internal.port}/hook"))
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.response_status == 200
    assert internal.requests == []
    assert network["public"].requests == [{"host": f"{REBIND}:{internal.port}", "path": "/hook"}]
    assert network["lookups"] == [REBIND]  # resolved once, for the check; the connection used it


def test_a_name_resolving_to_loopback_is_refused_at_creation_and_at_delivery(network):
    internal = network["internal"]
    url = f"http://loopback.example:{internal.port}/hook"
    with pytest.raises(InvalidInput, match=r"non-public address \(127\.0\.0\.1\)"):
        webhooks.webhook_create(repo=RepositoryFactory(), url=url)
    with pytest.raises(webhooks.DeliveryFailed, match=r"non-public address \(127\.0\.0\.1\)"):
        webhooks.attempt(_delivery(url))
    assert internal.requests == []


def test_tls_is_verified_for_the_name_at_the_pinned_address(network):
    delivery = webhooks.attempt(_delivery(f"https://{ORIGIN}/hook"))
    assert delivery.status == DeliveryStatus.DELIVERED
    assert network["public_tls"].requests == [{"host": ORIGIN, "path": "/hook"}]
    assert network["lookups"] == [ORIGIN]

    # A certificate that is not for the name (the stand-in serves origin.example's to anyone)
    # fails the delivery: the pinned address does not stand in for the name's identity.
    network["lookups"].clear()
    with pytest.raises(webhooks.DeliveryFailed, match="certificate"):
        webhooks.attempt(_delivery(f"https://{REBIND}/hook"))
    assert len(network["public_tls"].requests) == 1 and network["internal"].requests == []


def test_a_redirect_is_an_answer_never_followed(network):
    """A receiver's redirect (to loopback, here) fails the delivery; nothing else is asked."""
    internal = network["internal"]
    network["public"].answer = (307, f"http://127.0.0.1:{internal.port}/hook")
    with pytest.raises(webhooks.DeliveryFailed, match="HTTP 307"):
        webhooks.attempt(_delivery(f"http://{REBIND}:{internal.port}/hook"))
    assert len(network["public"].requests) == 1 and internal.requests == []
