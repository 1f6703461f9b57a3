"""What a token's scope allows, for every API view: the one rule (`scope_refusal`).

read: GET anything the user may read. write: also change things. status: only POST commit
statuses (a CI's token: if it leaks, nobody can read a private repository with it or change
anything but the checks shown next to commits); every other API call is refused, and so are
git requests (repos.gitaccess.authorize). Pages never accept tokens at all.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from repos.models import AccessToken
from repos.models import TokenScope as Scope

READ_SCOPE_MESSAGE = "This token has the read scope; create a token with the write scope to change things."
STATUS_SCOPE_MESSAGE = (
    "This token has the status scope: it may only post commit statuses "
    "(POST /api/v1/repos/{owner}/{name}/statuses/{sha}). Use a read or write token for anything else."
)
STATUS_POST_READ_MESSAGE = (
    "This token has the read scope; posting commit statuses needs a token with the status or write scope."
)


def request_token(request) -> AccessToken | None:
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, AccessToken) else None


def posts_statuses(view) -> bool:
    """The view takes status tokens for its POST (repos.api.statuses, and nothing else)."""
    return bool(getattr(view, "accepts_status_token", False))


def scope_refusal(token: AccessToken | None, method: str, view) -> str | None:
    """Why `token` may not make this request of this view, or None if its scope allows it.
    (Whether the user may, by role, is each view's own question.)"""
    if token is None:
        return None
    if token.scope == Scope.STATUS:
        return None if method == "POST" and posts_statuses(view) else STATUS_SCOPE_MESSAGE
    if method in SAFE_METHODS or token.allows_write:
        return None
    return STATUS_POST_READ_MESSAGE if posts_statuses(view) else READ_SCOPE_MESSAGE


class TokenScope(BasePermission):
    """A read-scoped token may only read; sessions and write tokens may also write; a status
    token may only post statuses (scope_refusal)."""

    message = READ_SCOPE_MESSAGE

    def has_permission(self, request, view):
        token = request_token(request)
        if token is None:
            if request.method in SAFE_METHODS:
                return True
            # Nobody writes anonymously: 401 before any lookup, whether or not the target exists.
            return bool(request.user and request.user.is_authenticated)
        refusal = scope_refusal(token, request.method, view)
        if refusal is not None:
            # DRF instantiates permissions per request, so the message is this request's.
            self.message = refusal
            return False
        return True


class Authenticated(BasePermission):
    message = "Authentication required: send a token as 'Authorization: Bearer <token>'."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated)
