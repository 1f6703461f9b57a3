"""A replica's requests to the primary: the forwarded request itself (streamed both ways),
the signed mark that tells the primary which node forwarded it for which client, and whether
the primary is up at all.

Streaming: the request body is copied from the WSGI input as it arrives (gunicorn has already
decoded a chunked body there) and the primary's answer is yielded as it comes, so a large
upload or clone through a replica never sits in memory.
"""

from __future__ import annotations

import html
import http.client
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

from django.conf import settings
from django.core import signing
from django.http import HttpResponse, StreamingHttpResponse

from repos.clientbody import ClientBody, ClientBodyError

log = logging.getLogger(__name__)

FORWARDED_BY = "X-Hostsite-Forwarded-By"
FORWARDED_FOR = "X-Hostsite-Forwarded-For"
FORWARDED_SIGNATURE = "X-Hostsite-Forwarded-Signature"
MARK_HEADERS = (FORWARDED_BY, FORWARDED_FOR, FORWARDED_SIGNATURE)
_SALT = "hostsite.replication.forwarded"
# A mark is checked when the primary starts the request, a moment after the replica signed
# it; the margin is for clocks that differ between nodes.
MARK_MAX_AGE = 300

CONNECT_TIMEOUT = 1.0
# Once connected: as long as a slow clone may stay silent (git sends keep-alives well within).
READ_TIMEOUT = 600.0
CHUNK = 64 * 1024
# A primary that failed to answer is believed down this long, per process.
DOWN_TTL = 2.0
# Cheap on every node: a static file that runs no query.
PROBE_PATH = "/favicon.ico"
RETRY_AFTER = 30
UNAVAILABLE = "read-only: the primary is unavailable; try again shortly"

# Hop-by-hop headers (RFC 9110 7.6.1) are the connection's, not the message's; and Expect,
# which this node's server has already answered for its client.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

# Written by this node's own server on every answer: the primary's would come twice.
SERVER_HEADERS = frozenset({"date", "server"})


class PrimaryUnavailable(Exception):
    pass


# --- the mark ----------------------------------------------------------------------------


def _mark_payload(node: str, client: str, method: str, path: str) -> str:
    return "\n".join((node, client, method, path))


def sign_mark(client: str, method: str, path: str) -> str:
    """`<timestamp>:<signature>` of the mark. The signed values themselves travel in their own
    headers and the request line: the primary checks the signature against what it received."""
    payload = _mark_payload(settings.HOSTSITE_NODE, client, method, path)
    return signing.TimestampSigner(salt=_SALT).sign(payload)[len(payload) + 1 :]


def verified_mark(request) -> tuple[str, str] | None:
    """(node, client address) if the request carries a mark a node signed for this very method
    and path, else None. The key derives from SECRET_KEY, which only the nodes share: a client
    cannot claim another address, nor replay a mark on another request after MARK_MAX_AGE."""
    node = request.META.get("HTTP_X_HOSTSITE_FORWARDED_BY", "")
    client = request.META.get("HTTP_X_HOSTSITE_FORWARDED_FOR", "")
    signature = request.META.get("HTTP_X_HOSTSITE_FORWARDED_SIGNATURE", "")
    if not (node and signature):
        return None
    payload = _mark_payload(node, client, request.method, request.get_full_path())
    try:
        signing.TimestampSigner(salt=_SALT).unsign(f"{payload}:{signature}", max_age=MARK_MAX_AGE)
    except signing.BadSignature:
        return None
    return node, client


def strip_mark(request) -> None:
    for header in MARK_HEADERS:
        request.META.pop("HTTP_" + header.upper().replace("-", "_"), None)


# --- is the primary up -------------------------------------------------------------------

_probe_lock = threading.Lock()
_down_at: list[float] = []


def _connection(timeout: float) -> http.client.HTTPConnection:
    url = urlsplit(settings.PRIMARY_URL)
    cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    return cls(url.hostname or "", url.port, timeout=timeout)


def _base_path() -> str:
    return urlsplit(settings.PRIMARY_URL).path.rstrip("/")


def note_primary(up: bool) -> None:
    with _probe_lock:
        _down_at[:] = [] if up else [time.monotonic()]


def known_down() -> bool:
    """Whether the primary failed to answer in this process less than DOWN_TTL seconds ago."""
    with _probe_lock:
        return bool(_down_at) and time.monotonic() - _down_at[0] < DOWN_TTL


def primary_available() -> bool:
    """Whether the primary answers HTTP at all (any status). Only a failure is remembered
    (DOWN_TTL): a burst of pushes while it is down costs one probe, not one each, and a
    primary that has just stopped is never taken for up because it answered a moment ago."""
    if known_down():
        return False
    up = True
    conn = _connection(CONNECT_TIMEOUT)
    try:
        conn.request(
            "HEAD", _base_path() + PROBE_PATH, headers={"Host": urlsplit(settings.PRIMARY_URL).netloc}
        )
        conn.getresponse().read()
    except (OSError, http.client.HTTPException):
        up = False
    finally:
        conn.close()
    note_primary(up)
    return up


# --- answers without the primary ---------------------------------------------------------


def unavailable_response(request, *, git: bool) -> HttpResponse:
    """503 in the client's language: git prints a text/plain body to its user, the API speaks
    its JSON error format, a browser gets a page."""
    if git:
        response = HttpResponse(UNAVAILABLE + "\n", status=503, content_type="text/plain; charset=utf-8")
    elif request.path_info.startswith("/api/"):
        body = {"error": {"code": "read_only", "message": UNAVAILABLE}}
        response = HttpResponse(json.dumps(body), status=503, content_type="application/json")
    else:
        page = (
            "<!doctype html><html lang=en><meta charset=utf-8><title>Read-only</title>"
            f"<h1>read-only: the primary is unavailable</h1><p>{html.escape(UNAVAILABLE)}.</p>"
            "<p>Pages are still served; changes can be made again in a moment.</p></html>"
        )
        response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER)
    response["Cache-Control"] = "no-store"
    return response


# --- the forwarded request ---------------------------------------------------------------


def _request_headers(request) -> dict[str, str]:
    headers: dict[str, str] = {}
    for key, value in request.META.items():
        if key.startswith("HTTP_"):
            name = key[5:].replace("_", "-").title()
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name = key.replace("_", "-").title()
        else:
            continue
        if name.lower() in HOP_BY_HOP or name in MARK_HEADERS or not value:
            continue
        headers[name] = value
    client = request.META.get("REMOTE_ADDR", "")
    path = request.get_full_path()
    headers[FORWARDED_BY] = settings.HOSTSITE_NODE
    headers[FORWARDED_FOR] = client
    headers[FORWARDED_SIGNATURE] = sign_mark(client, request.method, path)
    return headers


def _body(request) -> Iterator[bytes] | None:
    """The request body as it arrives: CONTENT_LENGTH bytes, or (chunked) up to its end.
    ClientBodyError when it cannot be read whole (repos.clientbody)."""
    raw = request.META.get("wsgi.input")
    length = request.META.get("CONTENT_LENGTH") or ""
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if raw is None or not (chunked or (length.isdigit() and int(length) > 0)):
        return None
    stream = ClientBody(raw)
    remaining = None if chunked else int(length)

    def chunks() -> Iterator[bytes]:
        nonlocal remaining
        while remaining is None or remaining > 0:
            data = stream.read(CHUNK if remaining is None else min(CHUNK, remaining))
            if not data:
                if remaining is not None:
                    # Sent on as it is, the primary would wait for the rest until it timed out.
                    raise ClientBodyError("the connection ended before Content-Length bytes came")
                return
            if remaining is not None:
                remaining -= len(data)
            yield data

    return chunks()


def forward(request) -> HttpResponse | StreamingHttpResponse:
    """The primary's answer to this request: status, headers (cookies included) and body; or
    400 when the client's body cannot be read. Raises PrimaryUnavailable when the primary
    cannot be reached before anything was sent back."""
    headers = _request_headers(request)
    body = _body(request)
    chunked = body is not None and "Content-Length" not in headers
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    conn = _connection(CONNECT_TIMEOUT)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(READ_TIMEOUT)
        # The headers and each piece of the body go as separate writes: with Nagle's algorithm
        # each small one waits for the previous one's (delayed) ACK, 40 ms a request.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.putrequest(
            request.method, _base_path() + request.get_full_path(), skip_host=True, skip_accept_encoding=True
        )
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders(message_body=body, encode_chunked=chunked)
        upstream = conn.getresponse()
    except ClientBodyError as exc:
        # The client's fault, not the primary's: closed before the body's end, the primary
        # drops what it got of it.
        conn.close()
        return HttpResponse(exc.message + "\n", status=400, content_type="text/plain; charset=utf-8")
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        note_primary(False)
        log.warning("forwarding %s %s to the primary failed: %s", request.method, request.path_info, exc)
        raise PrimaryUnavailable(str(exc)) from exc
    return _response(conn, upstream)


def _response(conn: http.client.HTTPConnection, upstream: http.client.HTTPResponse) -> StreamingHttpResponse:
    def content() -> Iterator[bytes]:
        try:
            while True:
                data = upstream.read1(CHUNK)
                if not data:
                    return
                yield data
        except (OSError, http.client.HTTPException) as exc:
            # Too late for a status: the client sees a truncated answer, as from the primary.
            log.warning("the primary's answer broke off: %s", exc)
        finally:
            conn.close()

    response = StreamingHttpResponse(content(), status=upstream.status, reason=upstream.reason)
    del response["Content-Type"]
    for name, value in upstream.getheaders():
        lower = name.lower()
        if lower in HOP_BY_HOP or lower in SERVER_HEADERS:
            continue
        if lower == "set-cookie":
            # Several Set-Cookie headers cannot share one header slot: Django writes each
            # cookie of response.cookies as its own.
            response.cookies.load(value)
        elif lower in response.headers and lower not in ("content-type", "content-length"):
            response.headers[name] = response.headers[name] + ", " + value
        else:
            response.headers[name] = value
    return response
