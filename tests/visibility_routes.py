"""Every URL pattern of the site, with what tests/test_visibility_matrix.py asks of it: a
repository route (`Row`), a route about one user's own object (`Owned`), or a public one
(`Public`). A route added without a row here fails `test_every_route_has_a_row`."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import get_resolver


@dataclass(frozen=True)
class Row:
    method: str
    path: str  # placeholders: {repo} (owner/name), {sha}, {push}, {hook}, {proposal}, {archived}
    owner_get: bool = True  # a GET by the owner must not be refused (only for GET rows)


@dataclass(frozen=True)
class Owned:
    """A top-level route about one user's object: another user gets what a missing object gets,
    404 unless `status` says otherwise (a form that redirects back with an error)."""

    method: str
    path: str
    status: int = 404


@dataclass(frozen=True)
class Public:
    """A route anyone may open; it must not mention the private repository to outsiders."""

    path: str | None  # None: not a page to open (a POST, a file download); why in `why`
    why: str = ""


# Repository-scoped routes, by URL name.
REPO_ROUTES: dict[str, Row] = {
    "repository": Row("GET", "/{repo}"),
    "repo-tree": Row("GET", "/{repo}/tree/main"),
    "repo-blob": Row("GET", "/{repo}/blob/main/README.md"),
    "repo-raw": Row("GET", "/{repo}/raw/main/README.md"),
    "repo-blame": Row("GET", "/{repo}/blame/main/README.md"),
    "repo-search": Row("GET", "/{repo}/search?q=secret"),
    "repo-commits-default": Row("GET", "/{repo}/commits"),
    "repo-commits": Row("GET", "/{repo}/commits/main"),
    "repo-commit": Row("GET", "/{repo}/commit/{sha}"),
    "repo-compare": Row("GET", "/{repo}/compare/main...w"),
    "repo-archive": Row("GET", "/{repo}/archive/main.tar.gz"),
    "repo-refs-json": Row("GET", "/{repo}/refs.json?kind=tag&q=v"),
    "repo-branches": Row("GET", "/{repo}/branches"),
    "repo-tags": Row("GET", "/{repo}/tags"),
    "repo-compare-pick": Row("GET", "/{repo}/compare"),
    "json-pushes": Row("GET", "/{repo}/json-pushes"),
    "pushlog-atom": Row("GET", "/{repo}/pushlog.atom"),
    "pushlog": Row("GET", "/{repo}/pushlog?workspaces=1&user=olga&ref=main"),
    "repository-settings": Row("GET", "/{repo}/settings"),
    "repository-member-set": Row("POST", "/{repo}/settings/members"),
    "repository-member-remove": Row("POST", "/{repo}/settings/members/olga/remove"),
    "repository-rename": Row("POST", "/{repo}/settings/rename"),
    "repository-transfer": Row("POST", "/{repo}/settings/transfer"),
    "repository-delete": Row("POST", "/{repo}/settings/delete"),
    "repository-restore": Row("POST", "/{repo}/restore"),
    "repository-webhook-add": Row("POST", "/{repo}/settings/webhooks"),
    "repository-webhook-delete": Row("POST", "/{repo}/settings/webhooks/{hook}/delete"),
    "mirror-settings": Row("GET", "/{repo}/settings/mirror"),
    "mirror-sync": Row("POST", "/{repo}/settings/mirror/sync"),
    "repository-refs": Row("GET", "/{repo}/settings/refs"),
    "repository-object-checks": Row("GET", "/{repo}/settings/object-checks"),
    "workspace-settings": Row("GET", "/{repo}/settings/workspaces"),
    "workspaces": Row("GET", "/{repo}/workspaces"),
    "workspace-user": Row("GET", "/{repo}/workspaces/olga"),
    "workspace-bundle": Row("GET", "/{repo}/workspaces/olga.bundle"),
    "workspace-ref": Row("GET", "/{repo}/workspaces/olga/w"),
    "archived-restore": Row("POST", "/{repo}/archived/{archived}/restore"),
    "webedit-edit": Row("GET", "/{repo}/edit/main/README.md"),
    "webedit-new": Row("GET", "/{repo}/new/main"),
    "webedit-upload": Row("GET", "/{repo}/upload/main"),
    "webedit-delete": Row("GET", "/{repo}/delete/main/README.md"),
    "webedit-done": Row("GET", "/{repo}/edited"),
    "repository-moderation": Row("GET", "/{repo}/settings/moderation"),
    "workspace-report": Row("GET", "/{repo}/report-workspace/olga"),
    "proposals": Row("GET", "/{repo}/proposals"),
    "proposal-new": Row("GET", "/{repo}/proposals/new"),
    "proposal": Row("GET", "/{repo}/proposals/{proposal}"),
    "proposal-revision": Row("GET", "/{repo}/proposals/{proposal}/revisions/1"),
    "proposal-edit": Row("POST", "/{repo}/proposals/{proposal}/edit"),
    "proposal-comment": Row("POST", "/{repo}/proposals/{proposal}/comment"),
    "proposal-approve": Row("POST", "/{repo}/proposals/{proposal}/approve"),
    "proposal-state": Row("POST", "/{repo}/proposals/{proposal}/state"),
    "proposal-merge": Row("GET", "/{repo}/proposals/{proposal}/merge?strategy=merge"),
    "proposal-auto-merge": Row("POST", "/{repo}/proposals/{proposal}/auto-merge"),
    "proposal-review-requests": Row("POST", "/{repo}/proposals/{proposal}/review-requests"),
    "proposal-threads": Row("POST", "/{repo}/proposals/{proposal}/threads"),
    "proposal-thread-reply": Row("POST", "/{repo}/proposals/{proposal}/threads/1/reply"),
    "proposal-thread-resolve": Row("POST", "/{repo}/proposals/{proposal}/threads/1/resolve"),
    "proposal-thread-comment": Row("POST", "/{repo}/proposals/{proposal}/threads/1/comments/1"),
    "proposal-suggestion-apply": Row("POST", "/{repo}/proposals/{proposal}/threads/1/comments/1/apply"),
    # The world's proposal has one revision: the owner's interdiff is tested in
    # tests/reviews/test_interdiff.py; here, that outsiders get what a missing repository gets.
    "proposal-interdiff": Row("GET", "/{repo}/proposals/{proposal}/interdiff/1..2", owner_get=False),
    "proposal-range-diff": Row("GET", "/{repo}/proposals/{proposal}/interdiff/1..2.txt", owner_get=False),
    "proposal-interdiff-pick": Row("GET", "/{repo}/proposals/{proposal}/interdiff?from=1&to=1"),
    "work": Row("GET", "/{repo}/work"),
    "work-text": Row("GET", "/{repo}/work.txt"),
    "work-stack": Row("GET", "/{repo}/work/stack/olga/w"),
    "short-hash": Row("GET", "/{repo}/c/{short}"),
    "bundles-page": Row("GET", "/{repo}/bundles"),
    "bundles-build": Row("POST", "/{repo}/bundles/build"),
    "bundle-list": Row("GET", "/{repo}.git/bundle-list"),
    "git-info-refs": Row("GET", "/{repo}.git/info/refs?service=git-upload-pack"),
    "git-rpc": Row("POST", "/{repo}.git/git-upload-pack"),
    # API
    "api-repo": Row("GET", "/api/v1/repos/{repo}"),
    "api-repo-restore": Row("POST", "/api/v1/repos/{repo}/restore"),
    "api-repo-transfer": Row("POST", "/api/v1/repos/{repo}/transfer"),
    "api-members": Row("GET", "/api/v1/repos/{repo}/members"),
    "api-member": Row("PUT", "/api/v1/repos/{repo}/members/olga"),
    "api-pushes": Row("GET", "/api/v1/repos/{repo}/pushes"),
    "api-push": Row("GET", "/api/v1/repos/{repo}/pushes/{push}"),
    "api-hooks": Row("GET", "/api/v1/repos/{repo}/hooks"),
    "api-hook": Row("GET", "/api/v1/repos/{repo}/hooks/{hook}"),
    "api-hook-deliveries": Row("GET", "/api/v1/repos/{repo}/hooks/{hook}/deliveries"),
    "api-mirror": Row("GET", "/api/v1/repos/{repo}/mirror"),
    "api-mirror-sync": Row("POST", "/api/v1/repos/{repo}/mirror/sync"),
    "api-refs": Row("GET", "/api/v1/repos/{repo}/refs"),
    "api-refs-remove": Row("POST", "/api/v1/repos/{repo}/refs/remove"),
    "api-ref": Row("DELETE", "/api/v1/repos/{repo}/refs/pull/1/head"),
    "api-object-checks": Row("GET", "/api/v1/repos/{repo}/object-checks"),
    "api-workspaces": Row("GET", "/api/v1/repos/{repo}/workspaces"),
    "api-workspace": Row("GET", "/api/v1/repos/{repo}/workspaces/olga"),
    "api-archived-refs": Row("GET", "/api/v1/repos/{repo}/workspaces/olga/archived"),
    "api-archived-ref-restore": Row(
        "POST", "/api/v1/repos/{repo}/workspaces/olga/archived/{archived}/restore"
    ),
    "api-protected-branches": Row("GET", "/api/v1/repos/{repo}/protected-branches"),
    "api-protected-branch": Row("DELETE", "/api/v1/repos/{repo}/protected-branches/main"),
    "api-workspace-settings": Row("GET", "/api/v1/repos/{repo}/workspace-settings"),
    "api-proposals": Row("GET", "/api/v1/repos/{repo}/proposals"),
    "api-proposal": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}"),
    "api-proposal-comments": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/comments"),
    "api-proposal-approvals": Row("POST", "/api/v1/repos/{repo}/proposals/{proposal}/approvals"),
    "api-proposal-merge": Row("POST", "/api/v1/repos/{repo}/proposals/{proposal}/merge"),
    "api-proposal-revisions": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/revisions"),
    "api-proposal-mergeability": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/mergeability"),
    "api-proposal-auto-merge": Row("PUT", "/api/v1/repos/{repo}/proposals/{proposal}/auto-merge"),
    "api-proposal-review-requests": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/review-requests"),
    "api-proposal-threads": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/threads"),
    "api-proposal-thread": Row("GET", "/api/v1/repos/{repo}/proposals/{proposal}/threads/1", owner_get=False),
    "api-proposal-thread-comment": Row(
        "PATCH", "/api/v1/repos/{repo}/proposals/{proposal}/threads/1/comments/1"
    ),
    "api-proposal-thread-comments": Row(
        "POST", "/api/v1/repos/{repo}/proposals/{proposal}/threads/1/comments"
    ),
    "api-work": Row("GET", "/api/v1/repos/{repo}/work"),
    "api-statuses": Row("GET", "/api/v1/repos/{repo}/statuses/{sha}"),
    "repository-deploy-keys": Row("GET", "/{repo}/settings/keys"),
    "repository-deploy-key-delete": Row("POST", "/{repo}/settings/keys/{deploy_key}/delete"),
    "api-deploy-keys": Row("GET", "/api/v1/repos/{repo}/keys"),
    "api-deploy-key": Row("GET", "/api/v1/repos/{repo}/keys/{deploy_key}"),
    "api-combined-status": Row("GET", "/api/v1/repos/{repo}/commits/{sha}/status"),
}

# Routes about one user's own objects.
OWNED_ROUTES: dict[str, Owned] = {
    "import": Owned("GET", "/imports/{import_id}"),
    "import-cancel": Owned("POST", "/imports/{import_id}/cancel"),
    "api-import": Owned("GET", "/api/v1/imports/{import_id}"),
    "api-import-cancel": Owned("POST", "/api/v1/imports/{import_id}/cancel"),
    "token-revoke": Owned("POST", "/settings/tokens/{token_id}/revoke"),
    "api-token": Owned("GET", "/api/v1/user/tokens/{token_id}"),
    "ssh-key-delete": Owned("POST", "/settings/keys/{ssh_key}/delete"),
    "api-ssh-key": Owned("GET", "/api/v1/user/keys/{ssh_key}"),
    "notification-read": Owned("POST", "/notifications/{notification}/read"),
    "api-notification-read": Owned("POST", "/api/v1/notifications/{notification}/read"),
    "workspace-export-request": Owned("POST", "/settings/workspace-exports/{repo_id}", status=302),
    "workspace-export-download": Owned("GET", "/settings/workspace-exports/download/{export}"),
    "api-workspace-export": Owned("GET", "/api/v1/user/workspace-exports/{export}"),
    "api-workspace-export-download": Owned("GET", "/api/v1/user/workspace-exports/{export}/download"),
    # The replicas' internal fetch: 404 to everyone without the replication token, the
    # repository's owner included (tests/replication/test_internal.py).
    "replication-upload-pack": Owned("POST", "/_replication/{repo_id}.git/git-upload-pack"),
}

# Everyone may open these; a private repository must not show up in them.
PUBLIC_ROUTES: dict[str, Public] = {
    "home": Public("/"),
    "signup": Public("/signup"),
    "login": Public("/login"),
    "logout": Public(None, "POST only; signs the caller out"),
    "repository-new": Public("/new"),
    "profile-settings": Public("/settings/profile"),
    "tokens": Public("/settings/tokens"),
    "ssh-keys": Public("/settings/keys"),
    "help-ssh": Public("/help/ssh"),
    "profile": Public("/olga"),
    "dashboard": Public("/dashboard"),
    "dashboard-stale-cleanup": Public(
        None, "POST only; the caller's own workspace refs: tests/showwork/test_dashboard.py"
    ),
    "notifications": Public("/notifications"),
    "notifications-read-all": Public(None, "POST only; marks the caller's own notifications read"),
    "notification-settings": Public("/settings/notifications"),
    "notification-subscription": Public(
        None, "POST only; a subject the caller may not see is 404: tests/notifications/test_subscriptions.py"
    ),
    "notifications-unsubscribe": Public(
        None, "signed token only the mail's recipient has: tests/notifications/test_email.py"
    ),
    "workspace-exports": Public("/settings/workspace-exports"),
    "moderation": Public("/moderation"),
    "replication-status": Public("/status"),
    "replication-status-json": Public("/status.json"),
    "bundle-object": Public(
        None,
        "content-addressed bundle files; private ones need the repository's "
        "credentials: tests/bundles/test_visibility.py",
    ),
    "image-proxy": Public(
        "/_img/00/00", "third-party images only, by signed URL: tests/repos/test_imageproxy.py"
    ),
    "replication-info-refs": Public(
        None,
        "internal: 404 to everyone, owners included, without the replication token: "
        "tests/replication/test_internal.py",
    ),
    "api-schema": Public("/api/v1/schema/"),
    "api-docs": Public("/api/v1/docs/"),
    "favicon": Public("/favicon.ico"),
    "api-user": Public("/api/v1/user"),
    "api-tokens": Public("/api/v1/user/tokens"),
    "api-ssh-keys": Public("/api/v1/user/keys"),
    "api-user-detail": Public("/api/v1/users/olga"),
    "api-repos": Public("/api/v1/repos"),
    "api-repos-owner": Public("/api/v1/repos?owner=olga"),
    "api-workspace-exports": Public("/api/v1/user/workspace-exports"),
    "api-notifications": Public("/api/v1/notifications"),
    "api-notification-preferences": Public("/api/v1/notifications/preferences"),
    "api-notification-subscriptions": Public("/api/v1/notifications/subscriptions"),
    "api-moderation-reports": Public("/api/v1/moderation/reports"),
    "api-moderation-report-dismiss": Public(
        None, "staff only, POST; tests/workspaces/test_moderation_pages.py"
    ),
    "api-moderation-actions": Public(None, "staff only, POST; tests/workspaces/test_moderation_pages.py"),
    "api-moderation-audit": Public("/api/v1/moderation/audit"),
    # A part of the private repository's name: the query itself is echoed back.
    "search": Public("/search?q=secret-proj&type=repositories"),
    "api-search-code": Public("/api/v1/search/code?q=secret"),
    "api-search-repositories": Public("/api/v1/search/repositories?q=secret-proj"),
    "api-search-commits": Public("/api/v1/search/commits?q=first"),
    "api-search-proposals": Public("/api/v1/search/proposals?q=work"),
}
# Patterns without a name: the dumb-HTTP catch-all answers 404 to everyone.
UNNAMED_OK = {r"^(?P<owner>[^/]+)/(?P<name>[^/]+?)\.git/(?P<rest>.*)$"}


def all_routes():
    def walk(patterns, prefix=""):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield pattern.name, prefix + str(pattern.pattern)

    return list(walk(get_resolver().url_patterns))
