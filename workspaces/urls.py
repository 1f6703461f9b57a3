from django.urls import path

from workspaces import views

urlpatterns = [
    path("<str:owner>/<str:name>/settings/workspaces", views.workspace_settings, name="workspace-settings"),
    path("<str:owner>/<str:name>/workspaces", views.workspaces_index, name="workspaces"),
    path("<str:owner>/<str:name>/archived/<int:pk>/restore", views.archived_restore, name="archived-restore"),
    path("<str:owner>/<str:name>/workspaces/<str:username>", views.workspace_user, name="workspace-user"),
    path("<str:owner>/<str:name>/workspaces/<str:username>/<path:refname>", views.workspace_ref,
         name="workspace-ref"),
]
