from django.urls import include, path

urlpatterns = [
    # Before repos: `POST repos` with an import_url starts an import, which only sources knows.
    path("api/v1/", include("sources.api_urls")),
    path("api/v1/", include("repos.api.urls")),
    path("api/v1/", include("workspaces.api_urls")),
    path("api/v1/", include("reviews.api_urls")),
    path("api/v1/", include("showwork.api_urls")),
    path("api/v1/", include("notifications.api_urls")),
    path("api/v1/", include("workspaces.moderation_api_urls")),
    path("api/v1/", include("search.api_urls")),
    path("api/v1/", include("sshgit.api_urls")),
    path("", include("replication.status_urls")),
    path("", include("workspaces.urls")),
    path("", include("workspaces.moderation_urls")),
    path("", include("reviews.urls")),
    path("", include("showwork.urls")),
    path("", include("notifications.urls")),
    path("", include("search.urls")),
    # Before repos: its `<owner>/<name>` pattern would take /help/ssh.
    path("", include("sshgit.urls")),
    # Before repos: its `<owner>/<name>.git/<rest>` catch-all would take the bundle list.
    path("", include("bundles.urls")),
    # Before repos, for the same reason: the replicas' internal fetch route.
    path("", include("replication.urls")),
    # Before repos: its `<username>` and `<owner>/<name>` patterns would take /new and /imports/<id>.
    path("", include("sources.urls")),
    path("", include("repos.urls")),
]
