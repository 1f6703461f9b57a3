from rest_framework.permissions import SAFE_METHODS, BasePermission

from repos.auth import request_token


class TokenScope(BasePermission):
    """A read-scoped token may only read; sessions and write tokens may also write."""

    message = "This token has the read scope; create a token with the write scope to change things."

    def has_permission(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        token = request_token(request)
        if token is None:
            # Nobody writes anonymously: 401 before any lookup, whether or not the target exists.
            return bool(request.user and request.user.is_authenticated)
        return token.allows_write


class Authenticated(BasePermission):
    message = "Authentication required: send a token as 'Authorization: Bearer <token>'."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated)
