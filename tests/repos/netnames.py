"""The names the SSRF guard tests resolve, and the resolver that answers for them as DNS would:
public names get documentation-free public addresses, others private ones."""

from __future__ import annotations

import contextlib
import ipaddress
import socket

ORIGIN, OTHER, INTERNAL = "origin.example", "other.example", "intranet.example"
PUBLIC = {ORIGIN: "93.184.216.34", OTHER: "93.184.216.35", "rebind.example": "93.184.216.36"}
SECRET = "s3cret-4711"


def resolver(table: dict[str, list[str] | str]):
    def resolve(host, port, **_):
        answer = table.get(host)
        if answer is None:
            with contextlib.suppress(ValueError):
                answer = str(ipaddress.ip_address(host))  # an address literal needs no DNS
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        addresses = [answer] if isinstance(answer, str) else answer
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return resolve


NAMES = resolver({**PUBLIC, INTERNAL: "10.0.0.7", "mixed.example": ["93.184.216.40", "192.168.1.9"]})
