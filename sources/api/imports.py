"""Imports in the API: `POST /api/v1/repos` with `import_url` starts one (sources.api.repositories), these
routes watch and cancel it. Who asked for it, the repository's admins and staff see it; anyone
else gets 404."""

from __future__ import annotations

from django.urls import path, reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.permissions import TokenScope
from repos.models import RepositoryImport
from sources import import_requests
from sources.templatetags.imports import progress_text


class ImportProgressSerializer(serializers.Serializer):
    state = serializers.CharField()
    phase = serializers.CharField()
    percent = serializers.IntegerField(allow_null=True)
    objects = serializers.CharField()
    received = serializers.CharField()
    cancelling = serializers.BooleanField()


class ImportSerializer(serializers.ModelSerializer):
    repository = serializers.SerializerMethodField()
    refs = serializers.CharField(source="refs_mode", read_only=True)
    progress = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    html_url = serializers.SerializerMethodField()

    class Meta:
        model = RepositoryImport
        fields = [
            "id",
            "full_name",
            "repository",
            "source_url",
            "refs",
            "mirror",
            "state",
            "cancel_requested",
            "phase",
            "percent",
            "objects_done",
            "objects_total",
            "bytes_received",
            "progress",
            "message",
            "report",
            "created_at",
            "started_at",
            "finished_at",
            "url",
            "html_url",
        ]
        read_only_fields = fields

    def _absolute(self, path_: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path_) if request else path_

    def get_repository(self, obj) -> str | None:
        return obj.repository.full_name if obj.repository_id and obj.repository else None

    @extend_schema_field(ImportProgressSerializer)
    def get_progress(self, obj) -> dict:
        return progress_text(obj)

    def get_url(self, obj) -> str:
        return self._absolute(reverse("api-import", kwargs={"import_id": obj.pk}))

    def get_html_url(self, obj) -> str:
        return self._absolute(reverse("import", kwargs={"import_id": obj.pk}))


def _import_or_404(request, import_id: int) -> RepositoryImport:
    imp = import_requests.import_for(request.user, import_id)
    if imp is None:
        raise NotFound("Import not found.")
    return imp


class ImportDetailView(APIView):
    # Anonymous callers get the same 404 as everyone who may not see the import.
    permission_classes = [TokenScope]

    @extend_schema(responses=ImportSerializer)
    def get(self, request, import_id: int):
        """State, live progress, the report once done, and the reason of a failure."""
        imp = _import_or_404(request, import_id)
        return Response(ImportSerializer(imp, context={"request": request}).data)


class ImportCancelView(APIView):
    permission_classes = [TokenScope]

    @extend_schema(request=None, responses={202: ImportSerializer})
    def post(self, request, import_id: int):
        """Cancel: a queued import at once; a running one within about a second (202 either way,
        409 once it has finished). The repository is removed."""
        imp = _import_or_404(request, import_id)
        imp = import_requests.import_cancel(imp=imp, actor=request.user)
        body = ImportSerializer(imp, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


# Routes of this API family; sources/api_urls.py splices them in.
urlpatterns: list = [
    path("imports/<int:import_id>", ImportDetailView.as_view(), name="api-import"),
    path("imports/<int:import_id>/cancel", ImportCancelView.as_view(), name="api-import-cancel"),
]
