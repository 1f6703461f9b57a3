from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from repos.views import (
    accounts,
    blame,
    browse,
    git_http,
    history,
    images,
    lifecycle,
    navigation,
    objectchecks,
    pushlog,
    pushlog_page,
    refs,
    repositories,
    search,
    site,
)

# `<owner>/<name>` with the `.git` suffix optional, for git's endpoints.
_REPO = r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?"

# Top-level paths here must stay in repos.names.RESERVED_NAMES, so no user can take them.
urlpatterns = [
    path("", repositories.home, name="home"),
    path("favicon.ico", site.favicon, name="favicon"),
    path("signup", accounts.signup, name="signup"),
    path("login", accounts.SignInView.as_view(), name="login"),
    path("logout", auth_views.LogoutView.as_view(), name="logout"),
    # "_img" can be no user's name (names start with a letter or digit).
    path("_img/<str:signature>/<str:encoded>", images.image_proxy, name="image-proxy"),
    path("settings/profile", accounts.profile_settings, name="profile-settings"),
    path("settings/tokens", accounts.tokens, name="tokens"),
    path("settings/tokens/<int:token_id>/revoke", accounts.token_revoke, name="token-revoke"),
    path("<str:username>", accounts.profile, name="profile"),
    re_path(_REPO + r"/info/refs$", git_http.info_refs, name="git-info-refs"),
    re_path(_REPO + r"/(?P<service>git-upload-pack|git-receive-pack)$", git_http.service_rpc, name="git-rpc"),
    re_path(r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)\.git/(?P<rest>.*)$", git_http.dumb_http),
    re_path(r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)(?:\.git)?/?$", repositories.repository, name="repository"),
    path("<str:owner>/<str:name>/tree/<path:spec>", browse.tree, name="repo-tree"),
    path("<str:owner>/<str:name>/blob/<path:spec>", browse.blob, name="repo-blob"),
    path("<str:owner>/<str:name>/raw/<path:spec>", browse.raw, name="repo-raw"),
    path("<str:owner>/<str:name>/blame/<path:spec>", blame.blame, name="repo-blame"),
    path("<str:owner>/<str:name>/search", search.search, name="repo-search"),
    path("<str:owner>/<str:name>/commits", history.commits, name="repo-commits-default"),
    path("<str:owner>/<str:name>/commits/<path:spec>", history.commits, name="repo-commits"),
    path("<str:owner>/<str:name>/commit/<str:sha>", history.commit, name="repo-commit"),
    path("<str:owner>/<str:name>/compare/<path:spec>", history.compare_view, name="repo-compare"),
    path("<str:owner>/<str:name>/archive/<path:spec>", browse.archive_view, name="repo-archive"),
    path("<str:owner>/<str:name>/json-pushes", pushlog.json_pushes, name="json-pushes"),
    path("<str:owner>/<str:name>/pushlog", pushlog_page.pushlog_page, name="pushlog"),
    path("<str:owner>/<str:name>/pushlog.atom", pushlog.pushlog_atom, name="pushlog-atom"),
    path("<str:owner>/<str:name>/settings", repositories.repository_settings, name="repository-settings"),
    path(
        "<str:owner>/<str:name>/settings/members",
        repositories.repository_member_set,
        name="repository-member-set",
    ),
    path("<str:owner>/<str:name>/settings/rename", lifecycle.repository_rename, name="repository-rename"),
    path(
        "<str:owner>/<str:name>/settings/transfer", lifecycle.repository_transfer, name="repository-transfer"
    ),
    path("<str:owner>/<str:name>/settings/delete", lifecycle.repository_delete, name="repository-delete"),
    path("<str:owner>/<str:name>/restore", lifecycle.repository_restore, name="repository-restore"),
    path(
        "<str:owner>/<str:name>/settings/webhooks",
        repositories.repository_webhook_add,
        name="repository-webhook-add",
    ),
    path(
        "<str:owner>/<str:name>/settings/webhooks/<int:hook_id>/delete",
        repositories.repository_webhook_delete,
        name="repository-webhook-delete",
    ),
    path(
        "<str:owner>/<str:name>/settings/members/<str:username>/remove",
        repositories.repository_member_remove,
        name="repository-member-remove",
    ),
    # Refs and object checks of one repository (each module lists its own).
    *refs.urlpatterns,
    *navigation.urlpatterns,
    *objectchecks.urlpatterns,
]
