"""The commit statuses API, in GitHub's shape, so a CI written for GitHub needs only the URL:

    POST /api/v1/repos/{owner}/{name}/statuses/{sha}       {state, context, description, target_url}
    GET  /api/v1/repos/{owner}/{name}/statuses/{sha}       the statuses, paginated, by context
    GET  /api/v1/repos/{owner}/{name}/commits/{sha}/status {state, sha, statuses, total_count}

`sha` is a full or abbreviated commit id in any case; answers name the full lower-case id. A
commit the reader may not see (missing, or reachable only from work a moderator hid) is 404,
as on the commit page. Posting needs write access and a session, a write token or a status
token (the only thing a status token may do: repos.api.permissions).
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from repos import statuses
from repos.api.access import repo_or_404
from repos.models import CommitStatus, StatusState


class CommitStatusSerializer(serializers.ModelSerializer):
    creator = serializers.CharField(source="creator.username", default=None, read_only=True)

    class Meta:
        model = CommitStatus
        fields = [
            "id",
            "sha",
            "state",
            "context",
            "description",
            "target_url",
            "creator",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class CommitStatusCreateSerializer(serializers.Serializer):
    """Types only; repos.statuses checks the values and says what is wrong with them."""

    state = serializers.ChoiceField(choices=StatusState.choices)
    # DRF's metaclass takes declared fields off the class, so this does not shadow the
    # serializer's `context` property (which mypy cannot know).
    context = serializers.CharField(  # type: ignore[assignment]
        required=False, allow_blank=True, trim_whitespace=False, help_text='default: "default"'
    )
    description = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, trim_whitespace=False
    )
    target_url = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, trim_whitespace=False, help_text="http(s) only"
    )


class CombinedStatusSerializer(serializers.Serializer):
    state = serializers.CharField(help_text='failure, pending, success, or "" when there is no status')
    sha = serializers.CharField()
    total_count = serializers.IntegerField()
    statuses = CommitStatusSerializer(many=True)


class StatusListView(GenericAPIView):
    serializer_class = CommitStatusSerializer
    accepts_status_token = True  # for POST only (repos.api.permissions.scope_refusal)

    @extend_schema(responses=CommitStatusSerializer(many=True))
    def get(self, request, owner: str, name: str, sha: str):
        """The commit's statuses, one per context (the latest report of each)."""
        repo = repo_or_404(request, owner, name)
        full = statuses.resolve_sha(repo, request.user, sha)
        page = self.paginate_queryset(statuses.statuses_queryset(repo, full).select_related("creator"))
        return self.get_paginated_response(CommitStatusSerializer(page, many=True).data)

    @extend_schema(request=CommitStatusCreateSerializer, responses={201: CommitStatusSerializer})
    def post(self, request, owner: str, name: str, sha: str):
        """Report the state of one context on a commit; a later report for the same context replaces it."""
        repo = repo_or_404(request, owner, name)
        data = CommitStatusCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        row, _previous = statuses.status_set(repo=repo, user=request.user, sha=sha, **data.validated_data)
        return Response(CommitStatusSerializer(row).data, status=status.HTTP_201_CREATED)


class CombinedStatusView(APIView):
    @extend_schema(responses=CombinedStatusSerializer)
    def get(self, request, owner: str, name: str, sha: str):
        """The combined state: failure if any context failed or errored, else pending if any is
        pending, success if all succeeded."""
        repo = repo_or_404(request, owner, name)
        result = statuses.combined(repo, statuses.resolve_sha(repo, request.user, sha))
        return Response(
            {
                "state": result.state,
                "sha": result.sha,
                "total_count": result.total_count,
                "statuses": CommitStatusSerializer(result.statuses, many=True).data,
            }
        )


urlpatterns: list = [
    path("repos/<str:owner>/<str:name>/statuses/<str:sha>", StatusListView.as_view(), name="api-statuses"),
    path(
        "repos/<str:owner>/<str:name>/commits/<str:sha>/status",
        CombinedStatusView.as_view(),
        name="api-combined-status",
    ),
]
