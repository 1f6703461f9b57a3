from django.urls import path

from workspaces import api, export_views

urlpatterns = [
    path("user/workspace-exports", export_views.ExportListView.as_view(), name="api-workspace-exports"),
    path(
        "user/workspace-exports/<int:export_id>",
        export_views.ExportDetailView.as_view(),
        name="api-workspace-export",
    ),
    path(
        "user/workspace-exports/<int:export_id>/download",
        export_views.ExportDownloadView.as_view(),
        name="api-workspace-export-download",
    ),
    path("repos/<str:owner>/<str:name>/workspaces", api.WorkspaceListView.as_view(), name="api-workspaces"),
    path(
        "repos/<str:owner>/<str:name>/workspaces/<str:username>",
        api.WorkspaceDetailView.as_view(),
        name="api-workspace",
    ),
    path(
        "repos/<str:owner>/<str:name>/workspaces/<str:username>/archived",
        api.ArchivedRefListView.as_view(),
        name="api-archived-refs",
    ),
    path(
        "repos/<str:owner>/<str:name>/workspaces/<str:username>/archived/<int:pk>/restore",
        api.ArchivedRefRestoreView.as_view(),
        name="api-archived-ref-restore",
    ),
    path(
        "repos/<str:owner>/<str:name>/protected-branches",
        api.ProtectedBranchListView.as_view(),
        name="api-protected-branches",
    ),
    path(
        "repos/<str:owner>/<str:name>/protected-branches/<path:branch>",
        api.ProtectedBranchDetailView.as_view(),
        name="api-protected-branch",
    ),
    path(
        "repos/<str:owner>/<str:name>/workspace-settings",
        api.WorkspaceSettingsView.as_view(),
        name="api-workspace-settings",
    ),
]
