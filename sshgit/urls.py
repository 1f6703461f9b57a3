"""SSH key pages. Included before repos.urls: its `<owner>/<name>` pattern would take
`help/ssh` ("help" and "settings" are reserved names, so no user or repository has them)."""

from django.urls import path

from sshgit import views

urlpatterns = [
    path("settings/keys", views.keys, name="ssh-keys"),
    path("settings/keys/<int:key_id>/delete", views.key_delete, name="ssh-key-delete"),
    path("help/ssh", views.help_ssh, name="help-ssh"),
    path("<str:owner>/<str:name>/settings/keys", views.deploy_keys, name="repository-deploy-keys"),
    path(
        "<str:owner>/<str:name>/settings/keys/<int:key_id>/delete",
        views.deploy_key_delete,
        name="repository-deploy-key-delete",
    ),
]
