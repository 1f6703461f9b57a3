"""The object checks API of a repository (repos/objectcheck.py).

    GET  /api/v1/repos/{owner}/{name}/object-checks   checks in force, legacy summary, override history
    POST /api/v1/repos/{owner}/{name}/object-checks   {"msg_id", "severity", "reason"}: an audited override

Repository admins and site staff read; only staff write (an admin who is not staff gets 403).
Everyone else gets 404, as for a private repository, whatever the repository's visibility.
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from repos import objectcheck, objectcheck_services
from repos.api.access import repo_or_404


class CheckSerializer(serializers.Serializer):
    msg_id = serializers.CharField()
    decision = serializers.ChoiceField(choices=[objectcheck.ACCEPT, objectcheck.REFUSE])
    default_severity = serializers.CharField(source="default")
    severity = serializers.CharField()
    overridden = serializers.BooleanField()
    why = serializers.CharField()


class OverrideSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    msg_id = serializers.CharField()
    severity = serializers.CharField(help_text="error, warn, ignore; empty: back to the default")
    actor = serializers.CharField(source="actor.username", default=None)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class OverrideRequest(serializers.Serializer):
    msg_id = serializers.CharField(max_length=64)
    severity = serializers.ChoiceField(choices=["", *objectcheck.SEVERITIES], allow_blank=True)
    reason = serializers.CharField(max_length=2000)


LEGACY = inline_serializer(
    "LegacyObjects",
    {
        "total": serializers.IntegerField(),
        "text": serializers.CharField(),
        "by_check": inline_serializer(
            "LegacyCount",
            {
                "msg_id": serializers.CharField(),
                "count": serializers.IntegerField(),
                "examples": serializers.ListField(child=serializers.CharField()),
            },
            many=True,
        ),
    },
)
STATE = inline_serializer(
    "ObjectChecks",
    {
        "checks": CheckSerializer(many=True),
        "legacy": LEGACY,
        "overrides": OverrideSerializer(many=True),
    },
)


LISTED = 200  # overrides shown, newest first: an audit trail longer than that is a conversation


def _readable(request, owner: str, name: str):
    repo = repo_or_404(request, owner, name)
    if not objectcheck_services.may_view(request.user, repo):
        raise NotFound("Repository not found.")
    return repo


class ObjectChecksView(APIView):
    @extend_schema(responses=STATE)
    def get(self, request, owner: str, name: str):
        """The checks in force for this repository, its legacy objects, and the override history."""
        repo = _readable(request, owner, name)
        summary, legacy = objectcheck_services.legacy_report(repo)
        overrides = objectcheck_services.overrides_history(repo)[:LISTED]
        return Response(
            {
                "checks": CheckSerializer(objectcheck_services.checks_in_force(repo), many=True).data,
                "legacy": {
                    "total": summary.total,
                    "text": summary.text if summary else "",
                    "by_check": legacy,
                },
                "overrides": OverrideSerializer(overrides, many=True).data,
            }
        )

    @extend_schema(request=OverrideRequest, responses={201: OverrideSerializer})
    def post(self, request, owner: str, name: str):
        """Staff only: set one check's severity for this repository ("" returns it to the default)."""
        repo = _readable(request, owner, name)
        if not objectcheck_services.is_staff(request.user):
            raise PermissionDenied("Only site staff may change the object checks of a repository.")
        data = OverrideRequest(data=request.data)
        data.is_valid(raise_exception=True)
        row = objectcheck_services.override_set(repo=repo, actor=request.user, **data.validated_data)
        return Response(OverrideSerializer(row).data, status=status.HTTP_201_CREATED)


urlpatterns: list = [
    path("repos/<str:owner>/<str:name>/object-checks", ObjectChecksView.as_view(), name="api-object-checks"),
]
