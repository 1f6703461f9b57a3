"""Routing on a replica: it answers what it holds fresh, sends pushes to the primary (307),
and forwards every write, and every read it cannot answer fresh, to the primary.

Every node names itself in `X-Hostsite-Node` on every response (a forwarded one keeps the
primary's), so a client or a test can tell who answered. On the primary, that and the
forwarded-request mark are all this does, without a query.

git and the 307 of a push: git follows it for the advertisement and sends the push itself to
the primary. After a redirect git asks for the credentials of the URL it was sent to, so
credentials written into the replica's URL are not carried over: a credential helper that
knows the primary's URL (or the same host name for both) is needed. A client that will not
follow redirects (`-c http.followRedirects=false`) fails with "remote: This node is a
read-only replica: push to <primary URL>" and "The requested URL returned error: 307".
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase

from replication import forward, freshness, routing
from replication.routing import Route

log = logging.getLogger(__name__)

NODE_HEADER = "X-Hostsite-Node"
# On a read a replica answered from a copy behind the primary, because the primary is down.
STALE_HEADER = "X-Hostsite-Stale"


class _PushRedirect(HttpResponseRedirect):
    # 307, not 302: a client repeats the same method and body where it is sent (a POST of
    # git-receive-pack stays one), and git moves the rest of the push to the new base URL.
    status_code = 307


class ReplicaRoutingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self._respond(request)
        if NODE_HEADER not in response:
            response[NODE_HEADER] = settings.HOSTSITE_NODE
        return response

    def _respond(self, request) -> HttpResponseBase:
        marked = _has_mark(request)
        mark = forward.verified_mark(request) if marked else None
        forward.strip_mark(request)
        if mark is not None:
            # A node forwarded this for its client: the client's address is the one that counts
            # (rate limits, logs, git access backends), and is only believed with a valid mark.
            request.META["REMOTE_ADDR"] = mark[1]
            request.hostsite_forwarded_by = mark[0]
        elif marked:
            log.warning(
                "ignored an unsigned or invalid forwarding mark from %s", request.META.get("REMOTE_ADDR")
            )
        if settings.HOSTSITE_ROLE != "replica":
            return self.get_response(request)
        if mark is not None:
            # Never forward a forwarded request again: PRIMARY_URL names a replica, and passing
            # it on could go round in a circle.
            log.error(
                "a replica received a request forwarded by %s: PRIMARY_URL must name the primary", mark[0]
            )
            return HttpResponse(
                "This node is a replica and received a request another node forwarded to it as "
                "the primary; check PRIMARY_URL.\n",
                status=508,
                content_type="text/plain; charset=utf-8",
            )
        return self._route(request)

    def _route(self, request) -> HttpResponseBase:
        decision = routing.decide(request)
        if decision.route is Route.LOCAL:
            return self.get_response(request)
        if decision.route is Route.PUSH:
            if not forward.primary_available():
                return forward.unavailable_response(request, git=True)
            location = settings.PRIMARY_PUBLIC_URL + request.get_full_path()
            response = _PushRedirect(location, content_type="text/plain; charset=utf-8")
            response.content = f"This node is a read-only replica: push to {location}\n".encode()
            return response
        stale_copy = False
        if decision.route is Route.REPOSITORY:
            holding = freshness.holding(decision.owner, decision.name)
            # Who is reading only matters behind the primary: a current copy loads no session.
            if holding is not None and (
                freshness.is_current(holding)
                or freshness.serves_locally(holding, freshness.reader_of(request))
            ):
                return self.get_response(request)
            stale_copy = holding is not None and freshness.has_copy(holding)
        return self._forward(request, stale_copy=stale_copy)

    def _forward(self, request, *, stale_copy: bool) -> HttpResponseBase:
        git = routing.is_git_request(request)
        # The forwarded request is its own probe: it fails fast when the primary is down.
        if not forward.known_down():
            try:
                return forward.forward(request)
            except forward.PrimaryUnavailable:
                if request.method not in ("GET", "HEAD"):
                    # Part of the body may be gone to the primary already: nothing to answer with.
                    return forward.unavailable_response(request, git=git)
        if stale_copy:
            # Without the primary, an old copy beats no answer: reads go on while it is down.
            response = self.get_response(request)
            response[STALE_HEADER] = "primary unavailable"
            return response
        return forward.unavailable_response(request, git=git)


def _has_mark(request) -> bool:
    return (
        "HTTP_X_HOSTSITE_FORWARDED_BY" in request.META
        or "HTTP_X_HOSTSITE_FORWARDED_SIGNATURE" in request.META
    )
