"""The API's repository access checks, shared by every app's endpoints."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, PermissionDenied

from repos import selectors
from repos.views import moved_to_readable


def repo_or_404(request, owner: str, name: str):
    repo = selectors.readable_repository(request.user, owner, name)
    if repo is None:
        moved_to_readable(request.user, owner, name)
        # Private and missing repositories look the same from outside.
        raise NotFound("Repository not found.")
    return repo


def require_admin(request, repo) -> None:
    if not selectors.can_admin(request.user, repo):
        raise PermissionDenied("Only the repository's admins may do this.")
