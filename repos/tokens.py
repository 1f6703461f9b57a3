"""Personal access tokens: generation, hashing, authentication.

A token is `hst_` + 40 url-safe random characters (240 bits). The prefix makes leaked tokens
easy to find with secret scanners, as GitHub's `ghp_` does. Only the SHA-256 is stored: with
that much entropy a slow password hash buys nothing, and a hash lets us find the row by an
indexed equality look-up instead of comparing secrets one by one.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from repos.models import AccessToken

TOKEN_PREFIX = "hst_"  # noqa: S105 - a public marker, not a secret
TOKEN_RANDOM_CHARS = 40
# Recording every use would write on every git request; once a minute is enough to tell
# whether a token is in use.
LAST_USED_GRANULARITY = timedelta(minutes=1)


def generate_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(30)[:TOKEN_RANDOM_CHARS]


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def looks_like_token(value: str) -> bool:
    return value.startswith(TOKEN_PREFIX) and len(value) == len(TOKEN_PREFIX) + TOKEN_RANDOM_CHARS


def authenticate_token(secret: str, *, username: str | None = None) -> AccessToken | None:
    """The live token for this secret (and user, if given), recording its use; else None."""
    if not isinstance(secret, str) or not looks_like_token(secret):
        return None
    now = timezone.now()
    token = (
        AccessToken.objects.select_related("user")
        .filter(digest=digest(secret), revoked_at__isnull=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    if username is not None and token.user.username.lower() != username.lower():
        return None
    # Conditional update: at most one write per token per minute, whatever the request rate.
    AccessToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_GRANULARITY)
    ).update(last_used_at=now)
    return token
