"""API of a repository's pull mirror: read it (readers), set it up, change or stop it, and
"Sync now" (admins). Private repositories answer 404 to everyone who may not read them."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.access import repo_or_404, require_admin
from repos.api.permissions import TokenScope
from repos.errors import NotFound
from sources import mirrors, selectors


class MirrorSerializer(serializers.Serializer):
    url = serializers.CharField()
    interval_minutes = serializers.IntegerField()
    enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    created_by = serializers.SerializerMethodField()
    last_sync_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    next_sync_at = serializers.DateTimeField(allow_null=True)
    last_error = serializers.CharField()
    consecutive_failures = serializers.IntegerField()
    failing = serializers.BooleanField()
    syncing = serializers.SerializerMethodField()

    def get_created_by(self, obj) -> str | None:
        return obj.created_by.username if obj.created_by else None

    def get_syncing(self, obj) -> bool:
        return mirrors.syncing(obj)


class MirrorSetSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=2000, required=False, trim_whitespace=True)
    interval_minutes = serializers.IntegerField(
        required=False, min_value=1, max_value=mirrors.MAX_INTERVAL_MINUTES
    )
    enabled = serializers.BooleanField(required=False)


def _admin_repo(request, owner: str, name: str):
    # The look-up first: a repository the caller may not read is a 404, signed in or not.
    repo = repo_or_404(request, owner, name)
    if not request.user.is_authenticated:
        raise NotAuthenticated("Authentication required: send a token as 'Authorization: Bearer <token>'.")
    require_admin(request, repo)
    return repo


def _mirror_or_404(repo):
    mirror = selectors.mirror_of(repo)
    if mirror is None:
        raise NotFound(f"{repo.full_name} does not mirror anything.", code="not_a_mirror")
    return mirror


class MirrorView(APIView):
    permission_classes = [TokenScope]  # a read-scoped token may only GET

    @extend_schema(responses=MirrorSerializer)
    def get(self, request, owner: str, name: str):
        repo = repo_or_404(request, owner, name)
        return Response(MirrorSerializer(_mirror_or_404(repo)).data)

    @extend_schema(request=MirrorSetSerializer, responses={200: MirrorSerializer, 201: MirrorSerializer})
    def put(self, request, owner: str, name: str):
        """Set up the mirror (201; `url` required; the first sync is queued) or change it (200)."""
        repo = _admin_repo(request, owner, name)
        data = MirrorSetSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        mirror = selectors.mirror_of(repo)
        if mirror is None:
            if not values.get("url"):
                raise serializers.ValidationError({"url": ["A mirror needs the URL of its upstream."]})
            mirror = mirrors.mirror_create(
                repo=repo,
                url=values["url"],
                created_by=request.user,
                interval_minutes=values.get("interval_minutes"),
            )
            if values.get("enabled") is False:
                mirror = mirrors.mirror_update(mirror=mirror, actor=request.user, enabled=False)
            else:
                mirrors.mirror_sync_request(mirror=mirror, actor=request.user)
            return Response(MirrorSerializer(mirror).data, status=status.HTTP_201_CREATED)
        mirror = mirrors.mirror_update(
            mirror=mirror,
            actor=request.user,
            url=values.get("url"),
            interval_minutes=values.get("interval_minutes"),
            enabled=values.get("enabled"),
        )
        return Response(MirrorSerializer(mirror).data)

    @extend_schema(responses={204: None})
    def delete(self, request, owner: str, name: str):
        """Stop mirroring: the repository keeps its refs and becomes a normal one."""
        repo = _admin_repo(request, owner, name)
        mirrors.mirror_delete(mirror=_mirror_or_404(repo), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MirrorSyncView(APIView):
    permission_classes = [TokenScope]

    @extend_schema(request=None, responses={202: None})
    def post(self, request, owner: str, name: str):
        """Queue a sync now (409 when paused or already syncing)."""
        repo = _admin_repo(request, owner, name)
        mirrors.mirror_sync_request(mirror=_mirror_or_404(repo), actor=request.user)
        return Response({"queued": True}, status=status.HTTP_202_ACCEPTED)


urlpatterns: list = [
    path("repos/<str:owner>/<str:name>/mirror", MirrorView.as_view(), name="api-mirror"),
    path("repos/<str:owner>/<str:name>/mirror/sync", MirrorSyncView.as_view(), name="api-mirror-sync"),
]
