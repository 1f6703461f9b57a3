"""Security headers Django does not set itself, and answers for input no view should see."""

import ipaddress
import logging
from urllib.parse import unquote_to_bytes

from django.conf import settings
from django.db import OperationalError
from django.http import HttpResponse, JsonResponse

from repos.api.errors import error_body
from repos.errors import InvalidInput

log = logging.getLogger(__name__)

# Everything is served from our own origin (the machines are offline, assets are vendored),
# so the policy can be strict; it neutralises any future escaping slip.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "text/html" in response.get("Content-Type", ""):
            response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


# C0 controls (NUL included), DEL and C1 controls never belong in a URL path: git refuses them
# in ref names, SQLite and PostgreSQL treat NUL differently, and subprocess raises on it.
_CONTROL = frozenset(range(0x00, 0x20)) | {0x7F} | frozenset(range(0x80, 0xA0))


def _bad_path(request) -> str | None:
    """Why the request's path cannot be served, or None."""
    # Django has decoded the path already, re-escaping invalid UTF-8 as %XX (which then names
    # nothing and 404s); gunicorn also hands over the path as sent, where it shows as such.
    raw_uri = request.META.get("RAW_URI")
    if raw_uri:
        try:
            unquote_to_bytes(raw_uri.split("?", 1)[0]).decode("utf-8")
        except UnicodeDecodeError:
            return "The URL path is not valid UTF-8."
    if any(ord(c) in _CONTROL for c in request.path_info):
        return "The URL path contains control characters."
    return None


def _error_response(request, status: int, code: str, message: str) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse(error_body(code, message), status=status)
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


class RejectBadInputMiddleware:
    """400 for paths no view should see (controls, invalid UTF-8), before any view, git or
    the database does; and 400 for invalid input a view let through to git (gitcore.git's guard)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        reason = _bad_path(request)
        if reason is not None:
            return _error_response(request, 400, "invalid", reason)
        response = self.get_response(request)
        if (
            response.status_code == 404
            and request.path_info.startswith("/api/")
            and "application/json" not in response.get("Content-Type", "")
        ):
            # No route matched (an id that is not a number, say): the API still answers in its
            # one error format, not with the HTML page.
            return _error_response(request, 404, "not_found", "Not found.")
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, InvalidInput):
            return _error_response(request, exception.status, exception.code, exception.message)
        return None


# SQLite's messages for a lock it waited DATABASE_BUSY_TIMEOUT for; PostgreSQL's SQLSTATEs for
# lock_not_available, serialization_failure, deadlock_detected and query_canceled (timeouts).
_BUSY_MESSAGES = ("database is locked", "database is busy", "database table is locked")
_BUSY_SQLSTATES = frozenset({"55P03", "40001", "40P01", "57014"})


def is_database_busy(exc: BaseException) -> bool:
    if not isinstance(exc, OperationalError):
        return False
    if any(text in str(exc).lower() for text in _BUSY_MESSAGES):
        return True
    return getattr(exc.__cause__, "sqlstate", None) in _BUSY_SQLSTATES


class DatabaseBusyMiddleware:
    """503 with Retry-After when the database stayed locked past the busy timeout: the client
    may simply try again, which a 500 does not tell it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not is_database_busy(exception):
            return None
        log.warning("database busy on %s %s: %s", request.method, request.path_info, exception)
        response = _error_response(request, 503, "busy", "The server is busy; try again in a moment.")
        response["Retry-After"] = str(settings.DATABASE_RETRY_AFTER)
        return response


def _trusted(address: str, proxies) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def forwarded_client(peer: str, forwarded_for: str, proxies) -> str:
    """The client's address: the peer's, unless the peer is a trusted proxy. Then it is the
    address that proxy appended to X-Forwarded-For, or, while that is a trusted proxy too, the
    one before it. What a client wrote into the header itself stands further left and is never
    reached: nobody can choose the address they are counted under."""
    address = peer
    hops = [hop.strip() for hop in forwarded_for.split(",")] if forwarded_for else []
    while hops and _trusted(address, proxies):
        hop = hops.pop()
        try:
            address = str(ipaddress.ip_address(hop))
        except ValueError:
            break  # not an address (a proxy writing ports, say): the proxy's own then
    return address


class TrustedProxyMiddleware:
    """REMOTE_ADDR becomes the client's address behind the TLS proxies of TRUSTED_PROXIES, so
    that everything after reads the one answer: rate limits, logs, bundle base URLs, and a
    replica's signed forwarding mark (replication.middleware applies that on the primary)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if settings.TRUSTED_PROXIES:
            request.META["REMOTE_ADDR"] = forwarded_client(
                request.META.get("REMOTE_ADDR", ""),
                request.META.get("HTTP_X_FORWARDED_FOR", ""),
                settings.TRUSTED_PROXIES,
            )
        return self.get_response(request)
