"""Staff-only REST API for moderation: the reports queue, actions, the audit log."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from repos import selectors as repo_selectors
from repos.api.pagination import Pagination, paginated
from repos.api.permissions import Authenticated, TokenScope
from workspaces import moderation
from workspaces import moderation_selectors as msel
from workspaces.models import ModerationAction, Report
from workspaces.moderation_views import run_action


class Staff(BasePermission):
    message = "Only site staff may use the moderation API."

    def has_permission(self, request, view):
        return moderation.is_staff(request.user)


STAFF = [Authenticated, Staff, TokenScope]


class ReportSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    repository = serializers.CharField(source="repository.full_name")
    user = serializers.CharField(source="target_user.username")
    reporter = serializers.CharField(source="reporter.username", allow_null=True, default=None)
    reason = serializers.CharField()
    state = serializers.CharField()
    workspace = serializers.DictField(
        source="flags",
        child=serializers.BooleanField(),
        help_text='The workspace\'s flags now: {"frozen", "hidden", "taken_down"}',
    )
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class AuditEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    actor = serializers.CharField(source="actor.username", allow_null=True, default=None)
    action = serializers.CharField()
    repository = serializers.CharField(source="repository.full_name", allow_null=True, default=None)
    user = serializers.CharField(source="target_user.username", allow_null=True, default=None)
    reason = serializers.CharField()
    before = serializers.JSONField()
    after = serializers.JSONField()
    detail = serializers.JSONField(help_text="What a repository action changed, e.g. {from, to}")
    created_at = serializers.DateTimeField()
    withheld = serializers.BooleanField(
        help_text="Refs or object ids of moderated content were left out: they are for staff only."
    )


class ActionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=[a for a in ModerationAction.values if a != "dismiss_report"])
    username = serializers.CharField(max_length=150)
    repository = serializers.CharField(
        max_length=300, required=False, allow_blank=True, help_text="owner/name; not for site bans"
    )
    reason = serializers.CharField(max_length=moderation.REASON_MAX)
    report = serializers.IntegerField(required=False, help_text="A report this action resolves")


class DismissSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=moderation.REASON_MAX, required=False, allow_blank=True)


class ReportListView(APIView):
    permission_classes = STAFF

    @extend_schema(
        operation_id="moderation_reports_list",
        responses=paginated(ReportSerializer),
        parameters=[OpenApiParameter("state", str, description="open (default), resolved, dismissed, all")],
    )
    def get(self, request):
        state = request.query_params.get("state", Report.State.OPEN)
        rows = msel.reports_queue(state=None if state == "all" else state)
        paginator = Pagination()
        page = msel.with_flags(paginator.paginate_queryset(rows, request, view=self))
        return paginator.get_paginated_response(ReportSerializer(page, many=True).data)


class ReportDismissView(APIView):
    permission_classes = STAFF

    @extend_schema(request=DismissSerializer, responses=ReportSerializer)
    def post(self, request, pk: int):
        report = Report.objects.filter(pk=pk).first()
        if report is None:
            raise NotFound("Report not found.")
        data = DismissSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = moderation.report_close(
            report=report,
            acting_user=request.user,
            resolved=False,
            reason=data.validated_data.get("reason", ""),
        )
        return Response(ReportSerializer(msel.with_flags([report])[0]).data)


class ActionView(APIView):
    permission_classes = STAFF

    @extend_schema(request=ActionSerializer, responses={201: AuditEntrySerializer})
    def post(self, request):
        data = ActionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        repo = None
        if values.get("repository"):
            owner, _, name = values["repository"].partition("/")
            repo = repo_selectors.readable_repository(request.user, owner, name)
            if repo is None:
                raise NotFound("Repository not found.")
        entry = run_action(
            action=values["action"],
            acting_user=request.user,
            username=values["username"],
            reason=values["reason"],
            repo=repo,
            report_id=values.get("report"),
        )
        row = msel.audit_rows([entry], request.user)[0]
        return Response(AuditEntrySerializer(row).data, status=status.HTTP_201_CREATED)


class AuditLogView(APIView):
    permission_classes = STAFF

    @extend_schema(
        operation_id="moderation_audit_list",
        responses=paginated(AuditEntrySerializer),
        parameters=[
            OpenApiParameter("repository", str, description="owner/name"),
            OpenApiParameter("user", str, description="the target's or the actor's username"),
            OpenApiParameter("action", str),
        ],
    )
    def get(self, request):
        params = request.query_params
        rows = msel.audit_log(
            repository=params.get("repository", ""),
            user=params.get("user", ""),
            action=params.get("action", ""),
        )
        paginator = Pagination()
        page = msel.audit_rows(paginator.paginate_queryset(rows, request, view=self) or [], request.user)
        return paginator.get_paginated_response(AuditEntrySerializer(page, many=True).data)
