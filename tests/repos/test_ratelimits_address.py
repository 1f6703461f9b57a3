"""The address limits count by: the TLS proxy's X-Forwarded-For only from TRUSTED_PROXIES, a
replica's signed mark on the primary, IPv6 clients by their /64; and nothing a client writes
itself."""

from __future__ import annotations

import ipaddress

import pytest
from django.test import Client, RequestFactory

from replication import forward
from repos.middleware import forwarded_client
from repos.ratelimits import address

pytestmark = pytest.mark.django_db
PROXIES = [ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8")]


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "proxies", "client"),
    [
        # Nobody trusted (the default): the header is nobody's word.
        ("192.0.2.1", "198.51.100.9", [], "192.0.2.1"),
        ("127.0.0.1", "198.51.100.9", [], "127.0.0.1"),
        # The proxy appends the address it received from; what the client wrote stays left.
        ("127.0.0.1", "198.51.100.9", PROXIES, "198.51.100.9"),
        ("127.0.0.1", "203.0.113.66, 198.51.100.9", PROXIES, "198.51.100.9"),
        # Two proxies of ours in a row.
        ("127.0.0.1", "203.0.113.66, 198.51.100.9, 10.1.2.3", PROXIES, "198.51.100.9"),
        # A peer that is no proxy of ours cannot name anyone.
        ("192.0.2.1", "10.1.2.3", PROXIES, "192.0.2.1"),
        # What is not an address ends the walk at the proxy that passed it on.
        ("127.0.0.1", "198.51.100.9, not-an-address", PROXIES, "127.0.0.1"),
        ("127.0.0.1", "", PROXIES, "127.0.0.1"),
        ("127.0.0.1", "2001:db8::7", PROXIES, "2001:db8::7"),
    ],
)
def test_the_forwarded_client(peer, forwarded_for, proxies, client):
    assert forwarded_client(peer, forwarded_for, proxies) == client


@pytest.mark.parametrize(
    ("remote", "counted_as"),
    [
        ("198.51.100.9", "198.51.100.9"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),
        ("::ffff:198.51.100.9", "198.51.100.9"),
    ],
)
def test_addresses_as_counted(remote, counted_as):
    assert address(RequestFactory().get("/", REMOTE_ADDR=remote)) == counted_as


@pytest.fixture
def anonymous_limit(settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "api-anonymous": (3, 86400)}


def statuses(client: Client, count: int, **headers) -> list[int]:
    return [client.get("/api/v1/users/nobody", headers=headers).status_code for _ in range(count)]


def test_a_client_cannot_choose_its_address_without_a_trusted_proxy(anonymous_limit, settings):
    settings.TRUSTED_PROXIES = []
    client = Client(REMOTE_ADDR="192.0.2.1")
    answers = [
        client.get("/api/v1/users/nobody", headers={"X-Forwarded-For": f"198.51.100.{i}"}).status_code
        for i in range(4)
    ]
    assert answers == [404, 404, 404, 429]


def test_behind_a_trusted_proxy_each_client_counts_alone(anonymous_limit, settings):
    settings.TRUSTED_PROXIES = PROXIES
    proxy = Client(REMOTE_ADDR="127.0.0.1")
    assert statuses(proxy, 4, **{"X-Forwarded-For": "198.51.100.1"}) == [404, 404, 404, 429]
    assert statuses(proxy, 1, **{"X-Forwarded-For": "198.51.100.2"}) == [404]
    assert statuses(proxy, 1, **{"X-Forwarded-For": "198.51.100.1, 198.51.100.2"}) == [404]
    assert statuses(proxy, 1, **{"X-Forwarded-For": "198.51.100.2, 198.51.100.1"}) == [429]


def _forwarded(client_address: str, path: str, settings) -> dict[str, str]:
    node = settings.HOSTSITE_NODE
    settings.HOSTSITE_NODE = "replica-1"  # signs as the replica would
    signature = forward.sign_mark(client_address, "GET", path)
    settings.HOSTSITE_NODE = node
    return {
        "X-Hostsite-Forwarded-By": "replica-1",
        "X-Hostsite-Forwarded-For": client_address,
        "X-Hostsite-Forwarded-Signature": signature,
    }


def test_requests_a_replica_forwards_count_for_their_clients(anonymous_limit, settings):
    settings.HOSTSITE_ROLE = "primary"
    path = "/api/v1/users/nobody"
    replica = Client(REMOTE_ADDR="10.9.9.9")  # every forwarded request comes from here
    assert statuses(replica, 4, **_forwarded("198.51.100.1", path, settings)) == [404, 404, 404, 429]
    assert statuses(replica, 3, **_forwarded("198.51.100.2", path, settings)) == [404] * 3
    # A mark the primary cannot verify names nobody: counted as the sender itself.
    forged = {**_forwarded("198.51.100.3", path, settings), "X-Hostsite-Forwarded-For": "198.51.100.4"}
    assert statuses(replica, 4, **forged) == [404, 404, 404, 429]
    assert statuses(replica, 1, **_forwarded("198.51.100.4", path, settings)) == [404]
