from django.urls import path

from sshgit import api

urlpatterns = [
    path("user/keys", api.KeyListView.as_view(), name="api-ssh-keys"),
    path("user/keys/<int:key_id>", api.KeyDetailView.as_view(), name="api-ssh-key"),
    path("repos/<str:owner>/<str:name>/keys", api.DeployKeyListView.as_view(), name="api-deploy-keys"),
    path(
        "repos/<str:owner>/<str:name>/keys/<int:key_id>",
        api.DeployKeyDetailView.as_view(),
        name="api-deploy-key",
    ),
]
