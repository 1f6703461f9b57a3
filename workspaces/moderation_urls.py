from django.urls import path

from workspaces import moderation_views

urlpatterns = [
    path("moderation", moderation_views.staff_page, name="moderation"),
    path(
        "<str:owner>/<str:name>/settings/moderation",
        moderation_views.repository_page,
        name="repository-moderation",
    ),
    path(
        "<str:owner>/<str:name>/report-workspace/<str:username>",
        moderation_views.report_workspace,
        name="workspace-report",
    ),
]
