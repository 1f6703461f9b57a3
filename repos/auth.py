"""Authentication with personal access tokens, for the API and (later) git over HTTP.

Accepted: `Authorization: Bearer <token>`, `Authorization: token <token>`, and HTTP Basic
`<username>:<token>` (what git sends). A Basic password that is not a token is refused here:
account passwords never authenticate API or git requests, so a leaked token is the worst case.
"""

from __future__ import annotations

import base64
import binascii

from django.contrib.auth import authenticate
from rest_framework import authentication, exceptions

from repos import ratelimits
from repos.api.permissions import scope_refusal
from repos.models import TokenScope
from repos.tokens import authenticate_token, looks_like_token


def parse_authorization(header: str) -> tuple[str | None, str] | None:
    """(username or None, secret) from an Authorization header, or None if absent.

    Raises ValueError for a header that is present but malformed.
    """
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    scheme = scheme.lower()
    value = value.strip()
    if scheme in {"bearer", "token"}:
        if not value:
            raise ValueError("empty token")
        return None, value
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError("malformed Basic credentials") from None
        username, sep, secret = decoded.partition(":")
        if not sep:
            raise ValueError("malformed Basic credentials")
        return username, secret
    return None


class CredentialsRefused(Exception):
    """Credentials were presented and do not authenticate (`malformed`: not even readable), or
    the address is past its limit of failures (`wait`: seconds, nothing was checked)."""

    def __init__(self, detail: str, *, malformed: bool = False, wait: int | None = None):
        super().__init__(detail)
        self.malformed = malformed
        self.wait = wait


def presented_token(request):
    """The token a request's Authorization header presents, or None when it presents none.

    The one reading of token credentials, for git over HTTP, the API and the replication
    status: past the limit of failures from this address no credential is even checked, and
    each failure counts against the address (repos.ratelimits); a request that authenticates
    is never counted. Raises CredentialsRefused."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return None
    # Read first, judged after the address's limit: a blocked address gets 429 whatever it sent.
    try:
        parsed, malformed = parse_authorization(header), None
    except ValueError as exc:
        parsed, malformed = None, str(exc)
    wait = ratelimits.auth_blocked(request)
    if wait is not None:
        raise CredentialsRefused(ratelimits.AUTH_REASON, wait=wait)
    if malformed is None and parsed is None:
        return None  # a scheme that is not ours (Negotiate, ...): no credentials for us
    token = authenticate_token(parsed[1], username=parsed[0]) if parsed is not None else None
    if token is None:
        wait = ratelimits.auth_failed(request)
        raise CredentialsRefused(malformed or "invalid token", malformed=malformed is not None, wait=wait)
    return token


class AccessTokenAuthentication(authentication.BaseAuthentication):
    www_authenticate_realm = "hostsite"

    def authenticate(self, request):
        try:
            token = presented_token(request)
        except CredentialsRefused as refused:
            _throttle_if_limited(refused.wait, ratelimits.AUTH_REASON)
            raise exceptions.AuthenticationFailed(
                str(refused) if refused.malformed else "Invalid, expired or revoked token."
            ) from None
        if token is None:
            return None
        if token.scope == TokenScope.STATUS:
            # Here as well as in the permission class: a view with permissions of its own (the
            # schema's) must not take a status token either.
            view = (getattr(request, "parser_context", None) or {}).get("view")
            refusal = scope_refusal(token, request.method, view)
            if refusal is not None:
                raise exceptions.PermissionDenied(refusal)
        return token.user, token

    def authenticate_header(self, request):
        return f'Bearer realm="{self.www_authenticate_realm}"'


def _throttle_if_limited(wait: int | None, reason: str) -> None:
    if wait is not None:
        # 429 in the API's error format, with Retry-After (repos.api.errors); DRF adds the wait.
        raise exceptions.Throttled(wait=wait, detail=reason)


class PasswordBasicAuthentication(authentication.BaseAuthentication):
    """HTTP Basic with an account password, accepted only where a script bootstraps its first
    token (POST /api/v1/user/tokens). Token-shaped passwords are left to the token class."""

    def authenticate(self, request):
        try:
            parsed = parse_authorization(request.META.get("HTTP_AUTHORIZATION", ""))
        except ValueError as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        if parsed is None or parsed[0] is None or looks_like_token(parsed[1]):
            return None
        # The sign-in form's limits, in the same counts.
        _throttle_if_limited(ratelimits.signin_attempt(request, parsed[0]), ratelimits.SIGNIN_REASON)
        user = authenticate(request._request, username=parsed[0], password=parsed[1])
        if user is None or not user.is_active:
            raise exceptions.AuthenticationFailed("Invalid username or password.")
        ratelimits.signin_succeeded(request, parsed[0])
        return user, None

    def authenticate_header(self, request):
        return 'Basic realm="hostsite"'
