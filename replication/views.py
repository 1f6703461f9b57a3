"""/status and /status.json: the site's nodes and replication, for staff only.

Everyone else gets the 404 an unknown page gets (anonymous visitors too, rather than a sign-in
page), so the route says nothing about the site's layout to outsiders. Each node answers from
the shared database itself: a replica does not forward these (they are not repository pages).
"""

from __future__ import annotations

from django.http import Http404, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from replication import status
from repos.auth import CredentialsRefused, presented_token
from repos.models import TokenScope


def _staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def _token_user(request):
    """The staff user a read or write token in Authorization names, or None. A status token
    may only post commit statuses, so it reads nothing here. Tokens that fail count with the
    git and API failures of the address; past their limit none is checked (the answer stays 404)."""
    try:
        token = presented_token(request)
    except CredentialsRefused:
        return None
    if token is None:
        return None
    if token.scope == TokenScope.STATUS:
        return None
    return token.user


@never_cache
@require_safe
def status_page(request):
    if not _staff(request.user):
        raise Http404
    return render(request, "replication/status.html", {"site": status.site_status()})


@never_cache
@require_safe
def status_json(request):
    if not (_staff(request.user) or _staff(_token_user(request))):
        raise Http404
    return JsonResponse(status.site_status().as_json())
