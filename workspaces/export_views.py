"""Workspace exports of deleted repositories (issue 8): the contributor's page, API and download.

A deleted repository answers 404 everywhere, so these are keyed by the user, not by the
repository's URL, and show only repositories where the user has a workspace."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from repos.api.permissions import Authenticated, TokenScope
from repos.errors import Forbidden, ServiceError
from repos.lifecycle import purge_after
from workspaces import exports
from workspaces.models import WorkspaceExport


def _download(request, export_id: int):
    """The bundle, or None if there is none to give. Forbidden if the workspace was taken down
    since it was built: the file holds what the take-down withholds."""
    export = (
        WorkspaceExport.objects.select_related("repository")
        .filter(
            pk=export_id,
            user=request.user,
            state=WorkspaceExport.State.READY,
            repository__deleted_at__isnull=False,
        )
        .first()
    )
    refusal = exports.export_refusal(export.repository, request.user) if export else None
    if refusal:
        raise Forbidden(refusal, code="workspace_moderated")
    path = exports.export_file(export) if export else None
    if path is None or not path.is_file():
        return None
    response = FileResponse(
        open(path, "rb"),  # noqa: SIM115 - FileResponse closes it
        content_type="application/x-git-bundle",
        as_attachment=True,
        filename=f"{export.repository.name}-{request.user.username}.bundle",  # type: ignore[union-attr]
    )
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
def export_index(request):
    rows = []
    for repo in exports.exportable_repositories(request.user):
        latest = WorkspaceExport.objects.filter(repository=repo, user=request.user).first()
        rows.append({"repo": repo, "export": latest, "purge_after": purge_after(repo)})
    return render(request, "workspaces/exports.html", {"rows": rows})


@login_required
@require_POST
def export_request(request, repo_id: int):
    try:
        repo = exports.exportable_repository(request.user, repo_id)
        exports.workspace_export_request(repo=repo, user=request.user)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"Building a bundle of your workspace in {repo.full_name}; refresh in a moment."
        )
    return redirect("workspace-exports")


@login_required
def export_download(request, export_id: int):
    try:
        response = _download(request, export_id)
    except Forbidden as exc:
        return HttpResponseForbidden(exc.message, content_type="text/plain; charset=utf-8")
    if response is None:
        raise Http404
    return response


class ExportSerializer(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.full_name", read_only=True)
    repository_id = serializers.IntegerField(read_only=True)
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = WorkspaceExport
        fields = [
            "id",
            "repository",
            "repository_id",
            "state",
            "size",
            "ref_count",
            "error",
            "created_at",
            "finished_at",
            "download_url",
        ]
        read_only_fields = fields

    def get_download_url(self, obj) -> str | None:
        if obj.state != WorkspaceExport.State.READY:
            return None
        request = self.context.get("request")
        path = f"/api/v1/user/workspace-exports/{obj.pk}/download"
        return request.build_absolute_uri(path) if request else path


class ExportRequestSerializer(serializers.Serializer):
    repository_id = serializers.IntegerField()


class ExportListView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(responses=ExportSerializer(many=True))
    def get(self, request):
        rows = WorkspaceExport.objects.filter(user=request.user).select_related("repository__owner")
        return Response(ExportSerializer(rows, many=True, context={"request": request}).data)

    @extend_schema(request=ExportRequestSerializer, responses={202: ExportSerializer})
    def post(self, request):
        data = ExportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        repo = exports.exportable_repository(request.user, data.validated_data["repository_id"])
        export = exports.workspace_export_request(repo=repo, user=request.user)
        return Response(
            ExportSerializer(export, context={"request": request}).data, status=status.HTTP_202_ACCEPTED
        )


class ExportDetailView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(responses=ExportSerializer)
    def get(self, request, export_id: int):
        export = (
            WorkspaceExport.objects.filter(pk=export_id, user=request.user)
            .select_related("repository__owner")
            .first()
        )
        if export is None:
            raise NotFound("Export not found.")
        return Response(ExportSerializer(export, context={"request": request}).data)


class ExportDownloadView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(responses={(200, "application/x-git-bundle"): bytes})
    def get(self, request, export_id: int):
        response = _download(request, export_id)
        if response is None:
            raise NotFound("Export not found or not ready.")
        return response
