"""Rate limits: what is counted, under which key, and what a client over a limit is told.

The rates are settings.RATE_LIMITS (hostsite/ratelimit_settings.py). Counting is
django-ratelimit's: a fixed window per key in the cache RATELIMIT_USE_CACHE, with an atomic add
and increment, so concurrent workers lose no count. Two kinds of limit:

- Every request counts: API reads and writes (per token, per session user, per address without
  either: ApiThrottle), and the pages that make git or the database work hard, per address
  (`limit("blame")`, SearchThrottle). Over the limit, the rest of the window answers 429.
- Only failures count, and past the limit every attempt is refused before its credentials are
  checked (a right guess must look like a wrong one) until the window ends:
  - sign-in, per account and per address: each attempt is counted before the password is
    checked and counted back as a success after, so concurrent guesses can never check more
    than the limit's number of wrong passwords;
  - token authentication over git and the API, per address: only a failure writes (a count,
    and the block when over), so a request that authenticates costs one cache read and is
    never counted. Clones and fetches are not limited, however many. Guesses in flight when
    the limit is reached are still checked (a few, at most one per server thread), which
    matters little for 240-bit tokens.

The address is REMOTE_ADDR, which repos.middleware (behind TRUSTED_PROXIES) and a replica's
signed forwarding mark (replication.middleware) have already made the client's own; an IPv6
client counts by its /64, which one machine usually holds whole.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.core import checks
from django.core.cache import caches
from django.shortcuts import render
from django_ratelimit.core import get_usage
from rest_framework.throttling import BaseThrottle

from repos.models import AccessToken

log = logging.getLogger(__name__)

AUTH_REASON = "Too many failed authentications from your address."
SIGNIN_REASON = "Too many failed sign-ins for this account or from your address."
PAGE_REASON = "Too many requests for these pages from your address."

# Caches whose add and incr are atomic across processes (tests/repos/test_ratelimits_cache.py).
ATOMIC_CACHES = frozenset({"django.core.cache.backends.redis.RedisCache", "diskcache.DjangoCache"})


def address(request) -> str:
    raw = request.META.get("REMOTE_ADDR", "")
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        return raw or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _account(username: str) -> str:
    # Sign-in matches names case-insensitively: "Alice" and "alice" are one account's guesses.
    return username.strip().lower()


def _cache():
    return caches[settings.RATELIMIT_USE_CACHE]


def _usage(request, group: str, value: str, *, increment: bool, counter: str = "") -> dict | None:
    """django-ratelimit's count of (group, value) in its current window (plus this event, with
    `increment`); None when the limit is off. `counter` names a second count kept beside it."""
    rate = settings.RATE_LIMITS.get(group)
    if rate is None:
        return None
    try:
        return get_usage(
            request, group=group + counter, key=lambda _group, _request: value, rate=rate, increment=increment
        )
    except Exception:
        # A cache that does not answer must not take sign-in, the API and git down with it.
        log.exception("rate limit %s not counted: the cache did not answer", group)
        return None


def _count(request, group: str, value: str) -> int | None:
    """Count one event under (group, value): the seconds left in the window if this event went
    over the limit, else None."""
    usage = _usage(request, group, value, increment=True)
    if usage is None or not usage["should_limit"]:
        return None
    return max(1, usage["time_left"])


def _attempt(request, group: str, value: str) -> int | None:
    """Count an attempt whose outcome is not known yet: seconds to wait if the attempts that
    did not succeed (so far, or not yet) are over the limit. Both counts share one window: its
    end depends on the value and the period only.

    The attempts that were no failure are read first: each of them counted itself before, so
    the difference never comes out smaller than the failures and attempts in flight, however
    requests interleave."""
    successes = _usage(request, group, value, increment=False, counter=":ok")
    attempts = _usage(request, group, value, increment=True)
    if attempts is None:
        return None
    failed = attempts["count"] - (successes["count"] if successes else 0)
    return max(1, attempts["time_left"]) if failed > attempts["limit"] else None


def _not_failed(request, group: str, value: str) -> None:
    """The attempt counted by _attempt was no failure (it succeeded, or was never tried)."""
    _usage(request, group, value, increment=True, counter=":ok")


def _block_key(group: str, value: str) -> str:
    prefix = getattr(settings, "RATELIMIT_CACHE_PREFIX", "rl:")
    return prefix + "blocked:" + hashlib.sha256(f"{group}\n{value}".encode()).hexdigest()


def _blocked(group: str, value: str) -> int | None:
    """Seconds until (group, value) may try again, or None. One cache read: this runs before
    every request that carries credentials, git's included."""
    if not settings.RATELIMIT_ENABLE or settings.RATE_LIMITS.get(group) is None:
        return None
    try:
        until = _cache().get(_block_key(group, value))
    except Exception:
        log.exception("rate limit %s not checked: the cache did not answer", group)
        return None
    left = math.ceil(until - time.time()) if until is not None else 0
    return left if left > 0 else None


def _fail(request, group: str, value: str) -> int | None:
    wait = _count(request, group, value)
    if wait is not None:
        try:
            _cache().set(_block_key(group, value), time.time() + wait, timeout=wait)
        except Exception:
            log.exception("rate limit %s not applied: the cache did not answer", group)
    return wait


def message(reason: str, wait: int) -> str:
    return f"{reason} Try again in {wait} seconds."


def _longest(*waits: int | None) -> int | None:
    return max((wait for wait in waits if wait is not None), default=None)


# --- failures ------------------------------------------------------------------------------


def auth_blocked(request) -> int | None:
    """Whether this address may present a token now (seconds to wait, or None)."""
    return _blocked("auth-failures", address(request))


def auth_failed(request) -> int | None:
    """Count a token that did not authenticate; seconds to wait if that was one too many."""
    return _fail(request, "auth-failures", address(request))


def _signin_keys(request, username: str) -> tuple[tuple[str, str], ...]:
    return (("signin-account", _account(username)), ("signin-address", address(request)))


def signin_attempt(request, username: str) -> int | None:
    """Count a password about to be checked, from the sign-in form or the API's token creation:
    seconds to wait instead if the account or the address is past its limit of failures."""
    keys = _signin_keys(request, username)
    wait = _longest(*(_attempt(request, group, value) for group, value in keys))
    if wait is not None:
        # Refused unchecked: no failure of the other key's either (an address past its limit
        # sending a thousand guesses must not lock the account it names).
        for group, value in keys:
            _not_failed(request, group, value)
    return wait


def signin_succeeded(request, username: str) -> None:
    """The password was right: that attempt is no failure."""
    for group, value in _signin_keys(request, username):
        _not_failed(request, group, value)


# --- every request -------------------------------------------------------------------------


def too_many(request, wait: int, reason: str = PAGE_REASON):
    response = render(request, "429.html", {"reason": message(reason, wait)}, status=429)
    response["Retry-After"] = str(wait)
    return response


def limit(group: str) -> Callable:
    """A page counted per address under `group`; over the limit it answers 429, before the
    view looks anything up (so the answer is the same for what exists and what does not)."""

    def decorator(view):
        @wraps(view)
        def limited(request, *args, **kwargs):
            wait = _count(request, group, address(request))
            if wait is not None:
                return too_many(request, wait)
            return view(request, *args, **kwargs)

        return limited

    return decorator


class ApiThrottle(BaseThrottle):
    """The API's reads and writes, counted apart: per token, per user signed in with a session,
    per address for anonymous requests. Runs after authentication, so a request whose
    credentials failed is counted with the failures, not here."""

    retry: int | None = None

    def allow_request(self, request, view) -> bool:
        write = request.method not in ("GET", "HEAD", "OPTIONS")
        token = getattr(request, "auth", None)
        if isinstance(token, AccessToken):
            # By digest rather than row id: one token's, even where databases share a cache.
            group, value = ("api-write" if write else "api-read"), f"token:{token.digest}"
        elif request.user.is_authenticated:
            group, value = ("api-write" if write else "api-read"), f"user:{request.user.pk}"
        else:
            group, value = "api-anonymous", address(request)
        self.retry = _count(request, group, value)
        return self.retry is None

    def wait(self) -> float | None:
        return self.retry


class SearchThrottle(ApiThrottle):
    """The search API, per address, in the same count as the search pages."""

    def allow_request(self, request, view) -> bool:
        self.retry = _count(request, "search", address(request))
        return self.retry is None


@checks.register(checks.Tags.caches)
def check_cache(app_configs, **kwargs) -> list[checks.CheckMessage]:
    backend = settings.CACHES.get(settings.RATELIMIT_USE_CACHE, {}).get("BACKEND")
    if backend in ATOMIC_CACHES:
        return []
    return [
        checks.Error(
            f"rate limits count in the cache {settings.RATELIMIT_USE_CACHE!r}, whose backend {backend} "
            "is not known to increment atomically across processes",
            hint=f"Use one of {', '.join(sorted(ATOMIC_CACHES))} (hostsite/ratelimit_settings.py).",
            id="repos.E001",
        )
    ]
