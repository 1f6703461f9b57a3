"""The Work graph in the API: nodes, edges and columns (showwork.render_json), with the page's
filters as query parameters."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.access import repo_or_404
from showwork.render_json import to_json
from showwork.views import filters_from, work_for

_PARAMS = [
    # Flags and the limit are read leniently (anything unrecognised means the default), so the
    # schema describes them as the strings they are.
    OpenApiParameter("mine", OpenApiTypes.STR, description="1 or true: only the signed-in user's workspace."),
    OpenApiParameter("user", OpenApiTypes.STR, description="Only this user's workspace."),
    OpenApiParameter(
        "branch", OpenApiTypes.STR, description="Only work based on (or pushed for) this branch."
    ),
    OpenApiParameter(
        "older", OpenApiTypes.STR, description="1 or true: include heads not updated in the last 30 days."
    ),
    OpenApiParameter(
        "limit", OpenApiTypes.STR, description="At most this many draft commits (1-1000, default 500)."
    ),
]


class WorkView(APIView):
    @extend_schema(
        parameters=_PARAMS,
        responses=OpenApiTypes.OBJECT,
        description="Unfinished work in workspaces, attached to the canonical history: nodes (with "
        "row and column), edges (elided ones carry the number of commits skipped), "
        "columns, and `more` (draft commits left out by the limit).",
    )
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        view = work_for(repo, request, filters_from(request.query_params, request.user))
        return Response(to_json(view.graph, view.layout))
