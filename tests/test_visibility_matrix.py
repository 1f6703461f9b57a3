"""Who may see what, asked at every route.

One rule for private repositories: to anonymous users and to signed-in outsiders, every page,
API route and git URL under a private repository answers exactly as it does for a repository
that does not exist (pages and API: 404 for outsiders; git: 401 anonymous, 404 outsiders), and
the same request by the owner is not refused. Routes outside a repository either belong to one
user (another user gets 404) or are public and must not mention the private repository.

Every URL pattern of the site has a row in tests/visibility_routes.py: a new route without one
fails `test_every_route_has_a_row`, so visibility is decided when the route is added.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from gitcore.git import run_git
from repos import pushes, services
from repos.models import ImportState, Mirror, RepositoryImport, Visibility, Webhook
from tests.factories import UserFactory
from tests.repos.histories import Work
from tests.visibility_routes import OWNED_ROUTES, PUBLIC_ROUTES, REPO_ROUTES, UNNAMED_OK, all_routes

pytestmark = pytest.mark.django_db

SECRET = "secret-proj-xyz"
ZERO = "0" * 40


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
    from sshgit.models import PublicKey

    ssh_key, deploy_key = (
        PublicKey.objects.create(
            title="k", key_type="ssh-ed25519", key_data="AAAA", fingerprint=f"SHA256:{owner}", **owner_field
        )
        for owner, owner_field in (("olga", {"user": olga}), ("repo", {"repository": repo}))
    )
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
        "ssh_key": ssh_key.pk,
        "deploy_key": deploy_key.pk,
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
