"""Routing on a replica (filled in by the routing work)."""

from __future__ import annotations


class ReplicaRoutingMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)
