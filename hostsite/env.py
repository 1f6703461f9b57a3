"""Parse settings from the environment.

Every parser names the variable it read in its error, so a misconfigured deployment
refuses to start with a message an operator can act on (Saleor's settings do the same).

Not environs or django-environ: bench/env_parsers.py reads 20 values operators write (a boolean,
a bounded port, a list) through all three. django-environ accepts 5 of the 7 bad ones without a
word ("maybe" is False, "2" is True, PORT=70000 passes: it has no range); environs refuses them
all but reads 13 of the 20 differently from the contract in docs/configuration.md (an empty
or " Yes " boolean is an error, "a, b" keeps the space, and every message is its own, naming
no accepted spellings). The URL parsers below check what no such library knows (SQLite must
be a file, S3 bucket names, CIDR tables); URLs themselves are urllib's and dj-database-url's.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any, cast, overload
from urllib.parse import unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


@overload
def env_str(name: str, default: str, *, required: bool = False) -> str: ...
@overload
def env_str(name: str, default: None = None, *, required: bool = False) -> str | None: ...
def env_str(name: str, default: str | None = None, *, required: bool = False) -> str | None:
    value = os.environ.get(name)
    if value is None or value == "":
        if required:
            raise ImproperlyConfigured(f"{name} must be set")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false, yes/no, on/off), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        number = int(value.strip(), 10)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        if maximum is None:
            raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
        if minimum is None:
            raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {number}")
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, got {number}")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def database_config(url: str, *, name: str = "DATABASE_URL") -> dict[str, Any]:
    """A Django DATABASES entry for a sqlite:/// or postgres:// URL."""
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        # Connections are kept (per thread) as for PostgreSQL: opening the file and setting
        # WAL mode was most of the ~3 ms a request spent finding its repository.
        # A TypedDict to dj_database_url; settings add keys of their own (OPTIONS, TEST).
        config = cast("dict[str, Any]", dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
        if not config.get("NAME") or config["NAME"] == ":memory:":
            raise ImproperlyConfigured(
                f"{name} must name a SQLite file, e.g. sqlite:////srv/hostsite/db.sqlite3"
            )
        config["OPTIONS"] = {
            # Web workers, Celery workers and beat write concurrently: WAL lets readers run during
            # a write, IMMEDIATE takes the write lock up front instead of failing on upgrade.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        return config
    if scheme in {"postgres", "postgresql", "pgsql"}:
        parts = urlsplit(url)
        if not parts.path.strip("/"):
            raise ImproperlyConfigured(
                f"{name} must name a database, e.g. postgres://user@host:5432/hostsite"
            )
        config = cast("dict[str, Any]", dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
        return config
    raise ImproperlyConfigured(f"{name} must be a sqlite:/// or postgres:// URL, got scheme {scheme!r}")


def broker_url(value: str, *, name: str = "CELERY_BROKER_URL") -> str:
    scheme = urlsplit(value).scheme
    if scheme not in {"filesystem", "redis", "rediss", "amqp", "amqps"}:
        raise ImproperlyConfigured(f"{name} must be a filesystem://, redis:// or amqp:// URL, got {value!r}")
    return value


def bundle_storage_config(url: str, endpoint_url: str | None) -> dict:
    """Parse BUNDLE_STORAGE_URL (file:///path or s3://bucket/prefix) and S3_ENDPOINT_URL."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        path = unquote(parts.path)
        if parts.netloc or not path.startswith("/"):
            raise ImproperlyConfigured(f"BUNDLE_STORAGE_URL must be file:///absolute/path, got {url!r}")
        return {"backend": "file", "path": path}
    if parts.scheme == "s3":
        bucket = parts.netloc
        # S3 bucket naming rules, so a typo fails here and not at the first upload.
        if not (3 <= len(bucket) <= 63) or not all(c.islower() or c.isdigit() or c in ".-" for c in bucket):
            raise ImproperlyConfigured(f"BUNDLE_STORAGE_URL must be s3://<bucket>/<prefix>, got {url!r}")
        if endpoint_url:
            endpoint = urlsplit(endpoint_url)
            if endpoint.scheme not in {"http", "https"} or not endpoint.netloc:
                raise ImproperlyConfigured(f"S3_ENDPOINT_URL must be an http(s):// URL, got {endpoint_url!r}")
        return {
            "backend": "s3",
            "bucket": bucket,
            "prefix": parts.path.strip("/"),
            "endpoint_url": endpoint_url or None,
        }
    raise ImproperlyConfigured(f"BUNDLE_STORAGE_URL must be a file:// or s3:// URL, got {url!r}")


def site_url(value: str | None, *, name: str = "SITE_URL") -> str:
    """The site's public base URL, "https://git.example.org/" (a path prefix kept), or "" when
    unset: then links for clients (git's `remote:` lines) use the host the request reached."""
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL without query, got {value!r}")
    if any(ord(c) <= 0x20 or ord(c) >= 0x7F for c in value):
        raise ImproperlyConfigured(f"{name} must be printable ASCII, got {value!r}")
    return value.rstrip("/") + "/"


def cidr_url_table(
    value: str | None, *, name: str = "BUNDLE_BASE_URLS"
) -> list[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]]:
    """`CIDR=URL` pairs, separated by commas or whitespace, most specific first.

    hg.mozilla.org serves same-region S3 to EC2 clients and the CDN to everyone else; this is
    that table: the first network containing the client's address picks the base URL.
    """

    table = []
    for item in (value or "").replace(",", " ").split():
        cidr, sep, url = item.partition("=")
        parts = urlsplit(url)
        if not sep or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ImproperlyConfigured(f"{name}: expected CIDR=https://base/ pairs, got {item!r}")
        try:
            network = ipaddress.ip_network(cidr.strip(), strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {cidr!r} is not a network in CIDR notation") from None
        table.append((network, url.rstrip("/") + "/"))
    return sorted(table, key=lambda entry: entry[0].prefixlen, reverse=True)


_RATE_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def env_rate(name: str, default: str) -> tuple[int, int] | None:
    """A rate limit written as django-ratelimit writes one, `count/period`: `10/m`, `30/5m`,
    `5000/h`; `off` for none. Returns (count, seconds) or None."""
    value = (os.environ.get(name) or default).strip().lower()
    if value == "off":
        return None
    count, sep, period = value.partition("/")
    unit = period[-1:]
    multiple = period[:-1] or "1"
    if not (sep and count.isdigit() and multiple.isdigit() and unit in _RATE_PERIODS):
        raise ImproperlyConfigured(
            f"{name} must be a rate such as 10/m, 30/5m or 5000/h (or off), got {value!r}"
        )
    seconds = int(multiple) * _RATE_PERIODS[unit]
    if int(count) < 1 or not 1 <= seconds <= 7 * 86400:
        raise ImproperlyConfigured(f"{name}: at least 1 per period, of 1 second to 7 days, got {value!r}")
    return int(count), seconds


def env_networks(name: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """Comma-separated addresses or networks in CIDR notation."""
    networks = []
    for item in env_list(name, []):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an address or a network in CIDR notation"
            ) from None
    return networks
