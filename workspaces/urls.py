from django.urls import path

from workspaces import bundle_views, export_views, views
from workspaces.webedit import views as webedit

urlpatterns = [
    path("settings/workspace-exports", export_views.export_index, name="workspace-exports"),
    path(
        "settings/workspace-exports/<int:repo_id>",
        export_views.export_request,
        name="workspace-export-request",
    ),
    path(
        "settings/workspace-exports/download/<int:export_id>",
        export_views.export_download,
        name="workspace-export-download",
    ),
    # The web editor (workspaces/webedit): `<spec>` is `<branch or workspace ref>/<path>`.
    path("<str:owner>/<str:name>/edit/<path:spec>", webedit.edit, name="webedit-edit"),
    path("<str:owner>/<str:name>/new/<path:spec>", webedit.add, name="webedit-new"),
    path("<str:owner>/<str:name>/upload/<path:spec>", webedit.upload, name="webedit-upload"),
    path("<str:owner>/<str:name>/delete/<path:spec>", webedit.delete, name="webedit-delete"),
    path("<str:owner>/<str:name>/edited", webedit.done, name="webedit-done"),
    path("<str:owner>/<str:name>/settings/workspaces", views.workspace_settings, name="workspace-settings"),
    path("<str:owner>/<str:name>/workspaces", views.workspaces_index, name="workspaces"),
    path("<str:owner>/<str:name>/archived/<int:pk>/restore", views.archived_restore, name="archived-restore"),
    # Before workspace-user, which would take "bob.bundle" for a username.
    path(
        "<str:owner>/<str:name>/workspaces/<str:username>.bundle",
        bundle_views.workspace_bundle,
        name="workspace-bundle",
    ),
    path("<str:owner>/<str:name>/workspaces/<str:username>", views.workspace_user, name="workspace-user"),
    path(
        "<str:owner>/<str:name>/workspaces/<str:username>/<path:refname>",
        views.workspace_ref,
        name="workspace-ref",
    ),
]
