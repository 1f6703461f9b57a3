from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from repos.api import docs, objectchecks, refs, statuses, views

# Owner and repository names are validated by the service layer; here a segment is anything
# without a slash, and unknown names simply 404.
urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", docs.api_docs, name="api-docs"),
    path("user", views.CurrentUserView.as_view(), name="api-user"),
    path("user/tokens", views.TokenListView.as_view(), name="api-tokens"),
    path("user/tokens/<int:token_id>", views.TokenDetailView.as_view(), name="api-token"),
    path("users/<str:username>", views.UserDetailView.as_view(), name="api-user-detail"),
    # `repos` (the list, and creating one) is sources' route: its create can also import.
    path("repos/<str:owner>/<str:name>", views.RepositoryDetailView.as_view(), name="api-repo"),
    path(
        "repos/<str:owner>/<str:name>/restore", views.RepositoryRestoreView.as_view(), name="api-repo-restore"
    ),
    path(
        "repos/<str:owner>/<str:name>/transfer",
        views.RepositoryTransferView.as_view(),
        name="api-repo-transfer",
    ),
    path("repos/<str:owner>/<str:name>/members", views.MemberListView.as_view(), name="api-members"),
    path(
        "repos/<str:owner>/<str:name>/members/<str:username>",
        views.MemberDetailView.as_view(),
        name="api-member",
    ),
    path("repos/<str:owner>/<str:name>/pushes", views.PushListView.as_view(), name="api-pushes"),
    path(
        "repos/<str:owner>/<str:name>/pushes/<int:push_id>", views.PushDetailView.as_view(), name="api-push"
    ),
    path("repos/<str:owner>/<str:name>/hooks", views.WebhookListView.as_view(), name="api-hooks"),
    path(
        "repos/<str:owner>/<str:name>/hooks/<int:hook_id>", views.WebhookDetailView.as_view(), name="api-hook"
    ),
    path(
        "repos/<str:owner>/<str:name>/hooks/<int:hook_id>/deliveries",
        views.WebhookDeliveriesView.as_view(),
        name="api-hook-deliveries",
    ),
    # Refs, object checks and commit statuses (each module lists its own routes).
    *refs.urlpatterns,
    *objectchecks.urlpatterns,
    *statuses.urlpatterns,
]
