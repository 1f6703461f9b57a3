"""The image proxy's fetches: the external image a signed URL names (render.imageproxy signs
and verifies them), fetched for `/_img/...` (repos.views.images).

A fetch is http(s) only, to public addresses only (the webhooks' rule, repos.netguard; the
networks in IMAGE_PROXY_ALLOW_NETWORKS are let through for development and tests), checked again
at every redirect (at most MAX_REDIRECTS), on a connection pinned to the checked address (no DNS
rebinding). It forwards no cookie, no referrer, no client header at all; it has one deadline for
the whole exchange and a size cap enforced while reading (a lying Content-Length changes
nothing); it accepts image types only, and the first bytes must be that type's.

SVG is served: most badges are SVG, and a browser never runs an SVG's scripts when it is an
<img>. Opened on its own, our answer's CSP (no script, `sandbox`) and nosniff keep it inert.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import quote, urljoin, urlsplit

from django.conf import settings
from django.core.cache import cache

from render.imageproxy import MAX_URL, sniff
from repos import netguard

MAX_REDIRECTS = 4
USER_AGENT = "hostsite-imageproxy/1 (images shown in rendered documents)"
_FAILURE_SECONDS = 60
_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"
# What we answer for each type we accept, whatever parameters or alias the upstream used.
CONTENT_TYPES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
    "image/avif": "image/avif",
    "image/x-icon": "image/x-icon",
    "image/vnd.microsoft.icon": "image/x-icon",
    "image/svg+xml": "image/svg+xml",
}


@dataclass(frozen=True)
class Image:
    content_type: str
    body: bytes


class Refused(Exception):
    """An image we will not serve: `status` (404 or 502) and a short reason for the body."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def _allowed_private(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return any(ip in ipaddress.ip_network(n, strict=False) for n in settings.IMAGE_PROXY_ALLOW_NETWORKS)


def _addresses(host: str, port: int) -> list[str]:
    try:
        found = netguard.public_addresses(host, port, allow_private=True)
    except netguard.SourceRefused:
        raise Refused(502, "The image's host does not resolve.") from None
    for address in found:
        if not ipaddress.ip_address(address).is_global and not _allowed_private(address):
            raise Refused(404, "Images are fetched from public addresses only.")
    return found


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise Refused(502, "The image took too long to fetch.")
    return left


def _cut(connection: http.client.HTTPConnection, cut: threading.Event) -> None:
    cut.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _read(
    connection: http.client.HTTPConnection, response: http.client.HTTPResponse, deadline: float, limit: int
) -> bytes:
    """The body, at most `limit` bytes, within the deadline (each read is given what is left)."""
    chunks, size = [], 0
    while True:
        if connection.sock is not None:
            connection.sock.settimeout(_remaining(deadline))
        chunk = response.read1(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > limit:
            raise Refused(502, "The image is too large.")
        chunks.append(chunk)
        _remaining(deadline)
    if response.length:  # the connection closed before the promised length: a broken image
        raise Refused(502, "The image could not be fetched.")
    return b"".join(chunks)


def _fetch_once(url: str, deadline: float) -> Image | str:
    """One request: the image, or the URL a redirect points to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise Refused(404, "Only http and https images are shown.")
    try:
        port = parts.port or netguard.DEFAULT_PORTS[scheme]
    except ValueError:
        raise Refused(404, "Not a valid image URL.") from None
    addresses = _addresses(parts.hostname, port)
    connection = netguard.pinned_connection(
        scheme, parts.hostname, addresses[0], port, timeout=_remaining(deadline)
    )
    # The request line is ASCII: anything else in the path or query is sent percent-encoded.
    path = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_URL_SAFE)
    # Socket timeouts bound each read, not the exchange: a host dripping its headers a byte a
    # second would pass them all. At the deadline the watchdog cuts the connection instead.
    cut = threading.Event()
    watchdog = threading.Timer(_remaining(deadline), _cut, (connection, cut))
    watchdog.daemon = True
    watchdog.start()
    result: Image | str | Refused
    try:
        result = _exchange(connection, url, path, deadline)
    except Refused as exc:
        result = exc
    except (OSError, http.client.HTTPException):
        result = Refused(502, "The image could not be fetched.")
    finally:
        watchdog.cancel()
        connection.close()
    # A cut connection reads as an early end (http.client takes EOF for the end of headers).
    if cut.is_set() or time.monotonic() >= deadline:
        raise Refused(502, "The image took too long to fetch.")
    if isinstance(result, Refused):
        raise result
    return result


def _exchange(connection: http.client.HTTPConnection, url: str, path: str, deadline: float) -> Image | str:
    connection.request(
        "GET",
        path,
        headers={"User-Agent": USER_AGENT, "Accept": "image/*", "Accept-Encoding": "identity"},
    )
    response = connection.getresponse()
    if response.status in (301, 302, 303, 307, 308):
        location = response.getheader("Location")
        if not location:
            raise Refused(502, "The image's host redirects nowhere.")
        return urljoin(url, location)
    if response.status != 200:
        raise Refused(502, f"The image's host answered HTTP {response.status}.")
    content_type = CONTENT_TYPES.get((response.getheader("Content-Type") or "").split(";")[0].strip().lower())
    if content_type is None:
        raise Refused(502, "Not an image.")
    if (response.getheader("Content-Encoding") or "identity").strip().lower() != "identity":
        raise Refused(502, "The image came encoded.")
    limit = settings.IMAGE_PROXY_MAX_BYTES
    length = (response.getheader("Content-Length") or "").strip()
    if length.isdigit() and int(length) > limit:
        raise Refused(502, "The image is too large.")
    body = _read(connection, response, deadline, limit)
    if not sniff(content_type, body[:4096]):
        raise Refused(502, "The image is not what its type says.")
    return Image(content_type, body)


def fetch(url: str) -> Image:
    """The image at `url`, following checked redirects; Refused says why not."""
    deadline = time.monotonic() + settings.IMAGE_PROXY_TIMEOUT
    for _ in range(MAX_REDIRECTS + 1):
        try:
            result = _fetch_once(url, deadline)
        except ValueError:  # a URL urllib or http.client cannot take (bad brackets, controls)
            raise Refused(502, "Not a valid image URL.") from None
        if isinstance(result, Image):
            return result
        url = result
        if len(url) > MAX_URL:
            raise Refused(502, "The image redirects to an invalid URL.")
    raise Refused(502, "The image redirects too many times.")


def cached_fetch(url: str) -> Image:
    """`fetch` through the cache: good images for IMAGE_PROXY_CACHE_SECONDS (those up to
    IMAGE_PROXY_CACHE_MAX_BYTES), refusals for a minute, so a page of broken images does not
    hold a worker for every view."""
    key = "imageproxy:" + hashlib.sha256(url.encode()).hexdigest()
    hit = cache.get(key)
    if isinstance(hit, tuple) and len(hit) == 3:
        kind, first, second = hit
        if kind == "image":
            return Image(first, second)
        raise Refused(first, second)
    try:
        image = fetch(url)
    except Refused as exc:
        cache.set(key, ("refused", exc.status, exc.message), _FAILURE_SECONDS)
        raise
    if len(image.body) <= settings.IMAGE_PROXY_CACHE_MAX_BYTES and settings.IMAGE_PROXY_CACHE_SECONDS:
        cache.set(key, ("image", image.content_type, image.body), settings.IMAGE_PROXY_CACHE_SECONDS)
    return image
