"""EMAIL_URL, parsed once at start-up into Django's email settings (docs/configuration.md):

    smtp://[user[:password]@]host[:port]       plain SMTP (port 25)
    smtp+tls://[user[:password]@]host[:port]   STARTTLS (port 587)
    smtps://[user[:password]@]host[:port]      TLS from the first byte (port 465)
    console://                                 mail printed by the worker (make run's default)
    unset                                      no mail at all: notifications stay on the site

A URL this does not understand stops the start with a message naming EMAIL_URL, instead of a
worker failing on every notification later.

Not django-environ's email_url_config (environs needs dj-email-url for the same): through
bench/env_parsers.py it read 7 of these 9 documented and bad URLs differently. smtps:// became
STARTTLS on port 25 instead of TLS on 465, smtp+tls:// lost its port 587, console:// is not a
scheme it knows, and 3 of the 4 bad URLs (no host; a path; a query) were accepted in silence."""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import formataddr, parseaddr
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.core.validators import validate_email

SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
CONSOLE_BACKEND = "django.core.mail.backends.console.EmailBackend"
DUMMY_BACKEND = "django.core.mail.backends.dummy.EmailBackend"
_SCHEMES = {"smtp": (25, False, False), "smtp+tls": (587, True, False), "smtps": (465, False, True)}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class EmailConfig:
    enabled: bool
    backend: str
    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = ""
    use_tls: bool = False
    use_ssl: bool = False


def email_config(url: str | None, *, name: str = "EMAIL_URL") -> EmailConfig:
    if not url:
        return EmailConfig(enabled=False, backend=DUMMY_BACKEND)
    if _CONTROL.search(url):
        raise ImproperlyConfigured(f"{name} must not contain control characters")
    parts = urlsplit(url)
    if parts.scheme == "console":
        return EmailConfig(enabled=True, backend=CONSOLE_BACKEND)
    if parts.scheme not in _SCHEMES:
        raise ImproperlyConfigured(
            f"{name} must start with smtp://, smtp+tls://, smtps:// or console://, got {parts.scheme!r}"
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name} takes no path, query or fragment: {parts.scheme}://host:port")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has an invalid port") from None
    if not parts.hostname:
        raise ImproperlyConfigured(f"{name} must name the SMTP server: {parts.scheme}://host[:port]")
    default_port, use_tls, use_ssl = _SCHEMES[parts.scheme]
    return EmailConfig(
        enabled=True,
        backend=SMTP_BACKEND,
        host=parts.hostname,
        port=port or default_port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_tls=use_tls,
        use_ssl=use_ssl,
    )


def from_address(value: str | None, site_url: str, *, name: str = "DEFAULT_FROM_EMAIL") -> str:
    """The From of every mail: DEFAULT_FROM_EMAIL ("Name <addr>" or "addr"), else
    "hostsite <notifications@<SITE_URL's host>>" ("localhost" without SITE_URL)."""
    if not value:
        host = urlsplit(site_url).hostname if site_url else None
        return formataddr(("hostsite", f"notifications@{host or 'localhost'}"))
    display, address = parseaddr(value)
    try:
        if _CONTROL.search(value):
            raise ValidationError("control characters")
        validate_email(address)
    except ValidationError:
        raise ImproperlyConfigured(f"{name} must be an address or 'Name <address>', got {value!r}") from None
    return formataddr((display, address)) if display else address
