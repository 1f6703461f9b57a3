"""REST API: the signed-in user's notifications, and marking one read."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from notifications import selectors, services
from repos.api.pagination import Pagination, paginated
from repos.api.permissions import Authenticated, TokenScope


class NotificationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    text = serializers.CharField()
    url = serializers.CharField()
    repository = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    read_at = serializers.DateTimeField(allow_null=True)
    unread = serializers.SerializerMethodField()

    def get_repository(self, notification) -> str | None:
        repo = notification.repository
        return repo.full_name if repo is not None else None

    def get_unread(self, notification) -> bool:
        return notification.read_at is None


class NotificationListView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(
        operation_id="notifications_list",
        responses=paginated(NotificationSerializer),
        parameters=[OpenApiParameter("unread", str, description="1, true or yes: only unread notifications")],
    )
    def get(self, request):
        unread_only = request.query_params.get("unread") in ("1", "true", "yes")
        paginator = Pagination()
        page = paginator.paginate_queryset(
            selectors.notifications_for(request.user, unread_only=unread_only), request, view=self
        )
        page = selectors.as_shown(page or [], request.user)
        return paginator.get_paginated_response(NotificationSerializer(page, many=True).data)


class NotificationReadView(APIView):
    permission_classes = [Authenticated, TokenScope]

    @extend_schema(request=None, responses=NotificationSerializer)
    def post(self, request, pk: int):
        notification = services.notification_mark_read(user=request.user, notification_id=pk)
        if notification is None:
            raise NotFound("Notification not found.")
        return Response(NotificationSerializer(selectors.as_shown([notification], request.user)[0]).data)
