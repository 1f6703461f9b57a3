"""Who may see what, asked at every route.

One rule for private repositories: to anonymous users and to signed-in outsiders, every page,
API route and git URL under a private repository answers exactly as it does for a repository
that does not exist (pages and API: 404 for outsiders; git: 401 anonymous, 404 outsiders), and
the same request by the owner is not refused. Routes outside a repository either belong to one
user (another user gets 404) or are public and must not mention the private repository.

Every URL pattern of the site has a row here: a new route without one fails
`test_every_route_has_a_row`, so visibility is decided when the route is added.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import get_resolver
from django.utils import timezone

from repos import pushes, services
from repos.git import run_git
from repos.models import ImportState, Mirror, RepositoryImport, Visibility, Webhook
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

SECRET = "secret-proj-xyz"
ZERO = "0" * 40


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
    "repo-commits-default": Row("GET", "/{repo}/commits"),
    "repo-commits": Row("GET", "/{repo}/commits/main"),
    "repo-commit": Row("GET", "/{repo}/commit/{sha}"),
    "repo-compare": Row("GET", "/{repo}/compare/main...w"),
    "repo-archive": Row("GET", "/{repo}/archive/main.tar.gz"),
    "json-pushes": Row("GET", "/{repo}/json-pushes"),
    "pushlog-atom": Row("GET", "/{repo}/pushlog.atom"),
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
    "workspace-ref": Row("GET", "/{repo}/workspaces/olga/w"),
    "archived-restore": Row("POST", "/{repo}/archived/{archived}/restore"),
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
    "proposal-merge": Row("POST", "/{repo}/proposals/{proposal}/merge"),
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
    "api-work": Row("GET", "/api/v1/repos/{repo}/work"),
}

# Routes about one user's own objects.
OWNED_ROUTES: dict[str, Owned] = {
    "import": Owned("GET", "/imports/{import_id}"),
    "import-cancel": Owned("POST", "/imports/{import_id}/cancel"),
    "api-import": Owned("GET", "/api/v1/imports/{import_id}"),
    "api-import-cancel": Owned("POST", "/api/v1/imports/{import_id}/cancel"),
    "token-revoke": Owned("POST", "/settings/tokens/{token_id}/revoke"),
    "api-token": Owned("GET", "/api/v1/user/tokens/{token_id}"),
    "notification-read": Owned("POST", "/notifications/{notification}/read"),
    "api-notification-read": Owned("POST", "/api/v1/notifications/{notification}/read"),
    "workspace-export-request": Owned("POST", "/settings/workspace-exports/{repo_id}", status=302),
    "workspace-export-download": Owned("GET", "/settings/workspace-exports/download/{export}"),
    "api-workspace-export": Owned("GET", "/api/v1/user/workspace-exports/{export}"),
    "api-workspace-export-download": Owned("GET", "/api/v1/user/workspace-exports/{export}/download"),
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
    "profile": Public("/olga"),
    "dashboard": Public("/dashboard"),
    "notifications": Public("/notifications"),
    "notifications-read-all": Public(None, "POST only; marks the caller's own notifications read"),
    "workspace-exports": Public("/settings/workspace-exports"),
    "moderation": Public("/moderation"),
    "bundle-object": Public(
        None,
        "content-addressed bundle files; private ones need the repository's "
        "credentials: tests/bundles/test_visibility.py",
    ),
    "api-schema": Public("/api/v1/schema/"),
    "api-user": Public("/api/v1/user"),
    "api-tokens": Public("/api/v1/user/tokens"),
    "api-user-detail": Public("/api/v1/users/olga"),
    "api-repos": Public("/api/v1/repos"),
    "api-repos-owner": Public("/api/v1/repos?owner=olga"),
    "api-workspace-exports": Public("/api/v1/user/workspace-exports"),
    "api-notifications": Public("/api/v1/notifications"),
    "api-moderation-reports": Public("/api/v1/moderation/reports"),
    "api-moderation-report-dismiss": Public(
        None, "staff only, POST; tests/workspaces/test_moderation_pages.py"
    ),
    "api-moderation-actions": Public(None, "staff only, POST; tests/workspaces/test_moderation_pages.py"),
    "api-moderation-audit": Public("/api/v1/moderation/audit"),
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


def test_every_route_has_a_row():
    known = set(REPO_ROUTES) | set(OWNED_ROUTES) | set(PUBLIC_ROUTES)
    missing = [
        f"{name} ({pattern})"
        for name, pattern in all_routes()
        if (name is None and pattern not in UNNAMED_OK) or (name is not None and name not in known)
    ]
    assert not missing, "routes without a row in the visibility matrix: " + ", ".join(missing)


@pytest.fixture
def world(tmp_path, git_home):
    """olga's private repository with a history, a workspace ref, a proposal, a push, a webhook,
    an archived ref, an import and a mirror; otto, a signed-in outsider."""
    from reviews.services import proposal_open
    from workspaces.models import ArchivedRef, WorkspaceExport

    work = Work(tmp_path / "w", git_home)
    sha = work.commit("first", {"README.md": "# secret\n"})
    work.git("checkout", "-q", "-b", "w")
    head = work.commit("work", {"a.txt": "a\n"})
    work.git("checkout", "-q", "main")
    repo = work.publish(owner="olga", name=SECRET, private=True)
    olga = repo.owner
    run_git(["update-ref", "refs/users/olga/w", head], repo=repo.disk_path)
    run_git(["update-ref", "refs/pull/1/head", head], repo=repo.disk_path)
    proposal = proposal_open(
        repo=repo, user=olga, source_ref="refs/users/olga/w", target_branch="main", title="work"
    )
    push = pushes.push_record(repo=repo, pusher=olga, updates=[pushes.Update(ZERO, head, "refs/heads/x")])
    hook = Webhook.objects.create(repository=repo, url="https://example.invalid/hook", secret="s")
    archived = ArchivedRef.objects.create(
        repository=repo,
        username="olga",
        ref="refs/users/olga/old",
        sha=sha,
        archive_ref="refs/archive/olga/1",
        branch="main",
        how="merged",
        reason="merged",
        expires_at=timezone.now() + timedelta(days=30),
    )
    imported = RepositoryImport.objects.create(
        repository=repo,
        full_name=f"olga/{SECRET}",
        requested_by=olga,
        source_url="https://example.invalid/x.git",
        state=ImportState.DONE,
    )
    Mirror.objects.create(repository=repo, url="https://example.invalid/x.git", enabled=False)
    export = WorkspaceExport.objects.create(repository=repo, user=olga)
    from notifications.services import notify

    notification = notify(olga, kind="test", text="hello", repository=repo)
    token = services.token_create(user=olga, scope="write")[0]
    otto = UserFactory(username="otto")
    otto_token = services.token_create(user=otto, scope="write")[1]
    olga_token = services.token_create(user=olga, scope="write")[1]
    values = {
        "sha": sha,
        "short": sha[:7],
        "push": push.pk,
        "hook": hook.pk,
        "proposal": proposal.number,
        "archived": archived.pk,
        "import_id": imported.pk,
        "export": export.pk,
        "notification": notification.pk,
        "token_id": token.pk,
        "repo_id": repo.pk,
    }
    return {
        "repo": repo,
        "olga": olga,
        "otto": otto,
        "values": values,
        "otto_token": otto_token,
        "olga_token": olga_token,
    }


def _client(user=None, token=None) -> Client:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}") if token else Client()
    if user is not None:
        client.force_login(user)
    return client


def _request(client: Client, method: str, path: str, *, git_token=None, username=None):
    kwargs = {}
    if "/git-upload-pack" in path:
        kwargs["content_type"] = "application/x-git-upload-pack-request"
    if git_token:
        import base64

        kwargs["HTTP_AUTHORIZATION"] = (
            "Basic " + base64.b64encode(f"{username}:{git_token}".encode()).decode()
        )
    call = getattr(client, method.lower())
    return (
        call(path, data=b"0000" if method == "POST" and "/git-" in path else None, **kwargs)
        if "/git-" in path
        else call(path, **kwargs)
    )


def _path(row_path: str, world, name: str) -> str:
    return row_path.format(repo=f"olga/{name}", **world["values"])


def test_private_repositories_answer_as_missing_ones_at_every_route(world):
    Visibility  # noqa: B018 - the repository is private (world), the other one does not exist
    failures = []
    for route, row in REPO_ROUTES.items():
        is_git = route.startswith("git-") or route == "bundle-list"
        is_api = row.path.startswith("/api/")
        for who in ("anonymous", "otto"):
            answers = {}
            for name in (SECRET, "no-such-repo"):
                path = _path(row.path, world, name)
                if who == "anonymous":
                    response = _request(_client(), row.method, path)
                elif is_git:
                    response = _request(
                        _client(), row.method, path, git_token=world["otto_token"], username="otto"
                    )
                elif is_api:
                    response = _request(_client(token=world["otto_token"]), row.method, path)
                else:
                    response = _request(_client(world["otto"]), row.method, path)
                location = response.get("Location", "").replace(name, "<name>")
                answers[name] = (response.status_code, location)
            private, missing = answers[SECRET], answers["no-such-repo"]
            if private != missing:
                failures.append(f"{route} {who}: private {private} != missing {missing}")
            elif who == "otto" and private[0] != 404:
                failures.append(f"{route} otto: {private[0]}, not 404")
            elif who == "anonymous" and private[0] not in (401, 404) and not private[1].startswith("/login"):
                failures.append(f"{route} anonymous: {private}")
        if row.method == "GET" and row.owner_get:
            path = _path(row.path, world, SECRET)
            if is_git:
                response = _request(_client(), "GET", path, git_token=world["olga_token"], username="olga")
            elif is_api:
                response = _request(_client(token=world["olga_token"]), "GET", path)
            else:
                response = _request(_client(world["olga"]), "GET", path)
            if response.status_code in (401, 403, 404):
                failures.append(f"{route} owner: {response.status_code}")
    assert not failures, "\n".join(failures)


def test_one_user_s_objects_are_404_to_another(world):
    failures = []
    missing_values = dict.fromkeys(world["values"], 999_999)
    for route, row in OWNED_ROUTES.items():
        path = row.path.format(**world["values"])
        api = path.startswith("/api/")
        answers = []
        for values in (world["values"], missing_values):
            client = _client(token=world["otto_token"]) if api else _client(world["otto"])
            response = _request(client, row.method, row.path.format(**values))
            answers.append((response.status_code, response.get("Location", "")))
        if answers[0] != answers[1] or answers[0][0] != row.status:
            failures.append(f"{route} otto: {answers[0]}, a missing one: {answers[1]}")
        if row.method == "GET":
            client = _client(token=world["olga_token"]) if api else _client(world["olga"])
            response = _request(client, "GET", path)
            if response.status_code == 404 and "download" not in route:
                failures.append(f"{route} owner: 404")
    assert not failures, "\n".join(failures)


def test_public_routes_never_mention_the_private_repository(world):
    failures = []
    for route, row in PUBLIC_ROUTES.items():
        if row.path is None:
            assert row.why, route
            continue
        for client in (_client(), _client(world["otto"]), _client(token=world["otto_token"])):
            response = client.get(row.path)
            if SECRET in response.content.decode("utf-8", "replace"):
                failures.append(f"{route}: mentions the private repository")
    assert not failures, "\n".join(failures)
