"""GET /api/v1/search/{code,repositories,commits,proposals}?q=...: paginated like every list
of the API. Anonymous callers find public content only; a token (read scope is enough) finds
its user's private content too."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.views import APIView

from repos.api.pagination import Pagination, paginated
from repos.ratelimits import SearchThrottle
from search.paging import Results
from search.query import QueryError, parse


class LineSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    text = serializers.CharField()


class CodeHitSerializer(serializers.Serializer):
    repository = serializers.CharField()
    path = serializers.CharField(source="data.path")
    blob = serializers.CharField(source="data.blob")
    commit = serializers.CharField(source="data.commit")
    url = serializers.CharField(
        help_text="The file's page at the indexed commit, at its first matching line."
    )
    lines = LineSerializer(many=True)


class RepositoryHitSerializer(serializers.Serializer):
    full_name = serializers.CharField(source="repository")
    description = serializers.CharField(source="data.description")
    visibility = serializers.CharField(source="data.visibility")
    url = serializers.CharField()


class CommitHitSerializer(serializers.Serializer):
    repository = serializers.CharField()
    sha = serializers.CharField(source="data.sha")
    message = serializers.CharField(source="data.message")
    author_name = serializers.CharField(source="data.author_name")
    author_email = serializers.CharField(source="data.author_email")
    committed_at = serializers.DateTimeField(source="data.committed_at")
    url = serializers.CharField()


class ProposalHitSerializer(serializers.Serializer):
    repository = serializers.CharField()
    number = serializers.IntegerField(source="data.number")
    title = serializers.CharField()
    state = serializers.CharField(source="data.state")
    author = serializers.CharField(source="data.author")
    url = serializers.CharField()


Q_PARAMETER = OpenApiParameter(
    "q", str, required=True, description="What to search for (at most 256 characters; a literal)."
)
PAGE_PARAMETERS = [
    OpenApiParameter("page", int, required=False, description="A page number (from 1)."),
    OpenApiParameter("per_page", int, required=False, description="Results per page (at most 100)."),
]
REGEX_PARAMETER = OpenApiParameter(
    "regex", bool, required=False, description="Code only, PostgreSQL only: `q` is a regular expression."
)


class _SearchView(APIView):
    kind = ""
    # The API's own limit per token, and the search pages' per address.
    throttle_classes = [*APIView.throttle_classes, SearchThrottle]
    serializer_class: type[serializers.Serializer] = serializers.Serializer

    def search(self, request):
        regex = request.query_params.get("regex", "").lower() in ("1", "true")
        try:
            query = parse(request.query_params.get("q"), regex=regex)
            if query is None:
                raise QueryError("Say what to search for: ?q=...")
            paginator = Pagination()
            page = paginator.paginate_queryset(Results(self.kind, query, request.user), request, view=self)
        except QueryError as exc:
            raise ValidationError({"q": [str(exc)]}) from None
        return paginator.get_paginated_response(self.serializer_class(page, many=True).data)


def _view(kind: str, serializer: type[serializers.Serializer], parameters: list) -> type[_SearchView]:
    # A function per view: drf-spectacular keeps each operation's schema on its function.
    @extend_schema(
        operation_id=f"search_{kind}",
        parameters=[*parameters, *PAGE_PARAMETERS],
        responses=paginated(serializer),
        summary=f"Search {kind} you may read",
    )
    def get(self, request):
        return self.search(request)

    return type(
        f"{kind.capitalize()}SearchView",
        (_SearchView,),
        {"kind": kind, "serializer_class": serializer, "get": get},
    )


CodeSearchView = _view("code", CodeHitSerializer, [Q_PARAMETER, REGEX_PARAMETER])
RepositorySearchView = _view("repositories", RepositoryHitSerializer, [Q_PARAMETER])
CommitSearchView = _view("commits", CommitHitSerializer, [Q_PARAMETER])
ProposalSearchView = _view("proposals", ProposalHitSerializer, [Q_PARAMETER])
