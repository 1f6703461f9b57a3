"""Rate limits' settings (repos/ratelimits.py), kept beside hostsite.settings, which imports
them: every limit, the cache that counts them, and which proxies may name the client's address.
docs/configuration.md lists them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hostsite.env import env_bool, env_networks, env_rate

__all__ = [
    "RATELIMIT_ENABLE",
    "RATELIMIT_FAIL_OPEN",
    "RATELIMIT_USE_CACHE",
    "RATE_LIMITS",
    "SILENCED_SYSTEM_CHECKS",
    "TRUSTED_PROXIES",
]

# Each limit: its environment variable and default, as `count/period`. What is counted and
# under which key is repos.ratelimits' decision; these say only how many per how long.
RATE_LIMIT_VARIABLES = {
    # Failed sign-ins (the sign-in form, and account passwords on the API's token creation):
    # per account name, whatever the address, and per address, whatever the account.
    "signin-account": ("RATELIMIT_SIGNIN_ACCOUNT", "10/15m"),
    "signin-address": ("RATELIMIT_SIGNIN_ADDRESS", "30/15m"),
    # Failed token authentication (git over HTTP, the API), per address. Successful requests
    # are never counted: a CI farm cloning all day is never limited.
    "auth-failures": ("RATELIMIT_AUTH_FAILURES", "30/5m"),
    # API requests per token (per user signed in with a session), and per address without any.
    "api-read": ("RATELIMIT_API_READ", "5000/h"),
    "api-write": ("RATELIMIT_API_WRITE", "1000/h"),
    "api-anonymous": ("RATELIMIT_API_ANONYMOUS", "1000/h"),
    # Pages that make git or the database work hard, per address (API equivalents included).
    "search": ("RATELIMIT_SEARCH", "60/m"),
    "blame": ("RATELIMIT_BLAME", "60/m"),
    "compare": ("RATELIMIT_COMPARE", "60/m"),
    "archive": ("RATELIMIT_ARCHIVE", "60/m"),
}
# group -> (count, seconds), or None where a limit is `off`.
RATE_LIMITS = {
    group: env_rate(variable, default) for group, (variable, default) in RATE_LIMIT_VARIABLES.items()
}
# django-ratelimit's switch: off, nothing is counted or limited.
RATELIMIT_ENABLE = env_bool("RATELIMIT_ENABLED", True)
RATELIMIT_USE_CACHE = "ratelimit"
# A count the cache lost (a key expiring between add and incr) lets that request through
# rather than refusing it; repos.ratelimits also lets requests through when the cache is down.
RATELIMIT_FAIL_OPEN = True

# Proxies whose X-Forwarded-For names the client (repos.middleware.TrustedProxyMiddleware):
# the TLS proxy in front of gunicorn. Nobody else's is believed, so a client cannot pick the
# address it is limited under. Replicas need no entry: they sign the address they forward for.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")

# django-ratelimit warns (W001) for every cache but django-redis and memcached. Both caches
# ratelimit_cache() chooses count atomically across processes, which is what it asks of one;
# repos.checks refuses any other (and django-ratelimit's own E003 still refuses the file cache).
SILENCED_SYSTEM_CHECKS = ["django_ratelimit.W001"]


def ratelimit_cache(cache_url: str, var_dir: Path) -> dict[str, Any]:
    """Where the counts live. Redis when the site has it (INCR and SET NX are atomic, and
    every node sharing CACHE_URL shares the limits). Otherwise SQLite through diskcache, whose
    add and incr are transactions: Django's file cache, the default cache's embedded backend,
    reads and rewrites a file to increment, and concurrent workers lose counts."""
    if cache_url.startswith(("redis://", "rediss://")):
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": cache_url}
    return {
        "BACKEND": "diskcache.DjangoCache",
        "LOCATION": str(var_dir / "ratelimit"),
        # Seconds a process waits for a shard's SQLite lock; diskcache's 10 ms default would let
        # a read under contention answer "no count" (a lock is held for microseconds).
        "DATABASE_TIMEOUT": 2.0,
        "SHARDS": 4,
    }
