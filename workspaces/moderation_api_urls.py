from django.urls import path

from workspaces import moderation_api

urlpatterns = [
    path("moderation/reports", moderation_api.ReportListView.as_view(), name="api-moderation-reports"),
    path(
        "moderation/reports/<int:pk>/dismiss",
        moderation_api.ReportDismissView.as_view(),
        name="api-moderation-report-dismiss",
    ),
    path("moderation/actions", moderation_api.ActionView.as_view(), name="api-moderation-actions"),
    path("moderation/audit", moderation_api.AuditLogView.as_view(), name="api-moderation-audit"),
]
