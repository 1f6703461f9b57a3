"""Bundles advertised by upload-pack in protocol v2 (git >= 2.40 on both ends).

The live test needs a server git and a client git of 2.40 or newer and skips, saying which
is older, elsewhere. To run it on a machine with an older git, point both at a newer build:
`PATH=/opt/git/bin:$PATH GIT_BINARY=/opt/git/bin/git pytest tests/bundles/test_protocol_v2.py`.
"""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest
from django.db.models import Sum
from django.test import Client

from bundles import access as gitconfig
from bundles import services
from bundles.models import Bundle, BundleState, Flavor, Kind
from bundles.storage import FileStorage
from gitcore.git import git_version
from repos import gitaccess
from repos.gitaccess import GitClient, GitRequest
from repos.models import DailyTransfer
from tests.bundles.conftest import add_commits, refs_of
from tests.bundles.test_live import bundle_downloads, clone
from tests.factories import RepositoryFactory
from tests.gitutil import git
from tests.support.wait import wait_until

V2 = GitClient(
    accept_encoding="deflate, gzip, br, zstd",
    remote_addr="127.0.0.1",
    base_url="http://testserver/",
    protocol="version=2",
)
NEEDED = (2, 40, 0)


def _version(text: str) -> tuple[int, int, int]:
    major, minor, patch = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text).groups()
    return int(major), int(minor), int(patch or 0)


def _dotted(version) -> str:
    return ".".join(map(str, version))


def require_bundle_uri_git(env) -> None:
    server = git_version()
    if server < NEEDED:
        pytest.skip(f"server git {_dotted(server)} < 2.40: no bundle-uri advertisement in protocol v2")
    client = _version(git(env, "version").stdout)
    if client < NEEDED:
        pytest.skip(f"client git {_dotted(client)} < 2.40: no transfer.bundleURI")


@pytest.fixture
def with_git(monkeypatch):
    """Pretend the server's git is a given version (the feature test is cached: reset it)."""

    def pretend(version):
        monkeypatch.setattr(gitconfig, "git_version", lambda: version)
        gitconfig.advertises_bundle_uris.cache_clear()

    yield pretend
    gitconfig.advertises_bundle_uris.cache_clear()


@pytest.fixture
def built(git_home, tmp_path, bundle_store):
    """A public repository with a base and an incremental bundle in both flavors."""
    repo = RepositoryFactory()
    work = tmp_path / "work"
    add_commits(repo.disk_path, work, git_home, 3, tag="v1")
    services.bundles_build(repo=repo)
    add_commits(repo.disk_path, work, git_home, 1)
    assert services.bundles_build(repo=repo).outcome.kind == Kind.INCREMENTAL
    return repo


def config(repo, *, advertise=False, client=V2, service="upload-pack"):
    """The bundle-uri part of a request's git config (other apps add theirs, e.g. hidden refs)."""
    req = GitRequest(repository=repo, user=None, role="", service=service, client=client)
    pairs = gitaccess.git_config(req, advertise=advertise, refs=None)
    return [(k, v) for k, v in pairs if k.startswith("bundle.") or k == "uploadpack.advertiseBundleURIs"]


# --- any git -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_config_pairs_are_the_bundle_list(built, with_git):
    with_git((2, 47, 3))
    pairs = config(built)
    rows = list(
        Bundle.objects.filter(repository=built, state=BundleState.PUBLISHED, flavor=Flavor.ZSTD).order_by(
            "creation_token"
        )
    )
    assert [row.kind for row in rows] == [Kind.BASE, Kind.INCREMENTAL]
    expected = [
        ("uploadpack.advertiseBundleURIs", "true"),
        ("bundle.version", "1"),
        ("bundle.mode", "all"),
        ("bundle.heuristic", "creationToken"),
    ]
    for row in rows:
        expected += [
            (f"bundle.{row.kind}-{row.creation_token}.uri", f"http://testserver/bundles/{row.storage_key}"),
            (f"bundle.{row.kind}-{row.creation_token}.creationToken", str(row.creation_token)),
        ]
    assert pairs == expected
    # Exactly what /bundle-list hands the same client.
    body = (
        Client().get(f"/{built.full_name}.git/bundle-list", HTTP_ACCEPT_ENCODING=V2.accept_encoding).content
    )
    listed = re.findall(r'\[bundle "([^"]+)"\]\n\turi = (\S+)\n\tcreationToken = (\d+)', body.decode())
    assert listed == [
        (row.list_id, f"http://testserver/bundles/{row.storage_key}", str(row.creation_token)) for row in rows
    ]
    # The standard flavor for a client without zstd, a mirror for a client in BUNDLE_BASE_URLS.
    standard = config(
        built, client=GitClient(accept_encoding="gzip", base_url="http://testserver/", protocol="version=2")
    )
    assert [v for k, v in standard if k.endswith(".uri")] == [
        f"http://testserver/bundles/{row.storage_key}"
        for row in Bundle.objects.filter(
            repository=built, state=BundleState.PUBLISHED, flavor=Flavor.STANDARD
        ).order_by("creation_token")
    ]


@pytest.mark.django_db
def test_base_url_per_network_and_what_gets_nothing(built, with_git, settings):
    from hostsite.env import cidr_url_table

    with_git((2, 47, 3))
    settings.BUNDLE_BASE_URLS = cidr_url_table("192.0.2.0/24=https://region.example/mirror/")
    routed = config(
        built,
        client=GitClient(
            accept_encoding="zstd",
            remote_addr="192.0.2.9",
            base_url="http://testserver/",
            protocol="version=2",
        ),
    )
    uris = [v for k, v in routed if k.endswith(".uri")]
    assert len(uris) == 2 and all(u.startswith("https://region.example/mirror/bundles/public/") for u in uris)
    # The advertisement (GET) carries the capability only; v0/v1 and pushes get nothing.
    assert config(built, advertise=True) == [("uploadpack.advertiseBundleURIs", "true")]
    assert config(built, client=GitClient(protocol=None)) == []
    assert config(built, client=None) == []
    assert not [
        k for k, _v in config(built, service="receive-pack") if k.startswith(("bundle.", "uploadpack."))
    ]


@pytest.mark.django_db
def test_nothing_on_git_older_than_2_40(built, with_git):
    with_git((2, 39, 5))
    assert config(built, advertise=True) == [] and config(built) == []
    with_git((2, 40, 0))
    assert ("uploadpack.advertiseBundleURIs", "true") in config(built, advertise=True)
    assert any(k.startswith("bundle.") for k, _v in config(built))


@pytest.mark.django_db
def test_no_bundles_no_capability_but_posts_still_accept_the_command(git_home, tmp_path, with_git):
    with_git((2, 47, 3))
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    assert config(repo, advertise=True) == []
    # A client that saw the capability before the bundles went may still send the command;
    # upload-pack dies on a command it does not advertise.
    assert config(repo) == [("uploadpack.advertiseBundleURIs", "true")]


@pytest.mark.django_db
def test_storage_checks_are_cached_for_v2_only(built, with_git, settings):
    with_git((2, 47, 3))
    calls = []
    real = FileStorage.size

    def counting(self, key):
        calls.append(key)
        return real(self, key)

    with mock.patch.object(FileStorage, "size", counting):
        config(built)
        config(built)
        assert len(calls) == 2  # two bundles, checked once
        Client().get(f"/{built.full_name}.git/bundle-list", HTTP_ACCEPT_ENCODING="zstd")
        assert len(calls) == 4  # the list view always asks
        settings.BUNDLE_PRESENCE_CACHE_SECONDS = 0
        config(built)
        assert len(calls) == 6


@pytest.mark.django_db
def test_missing_object_and_storage_down_as_in_the_list(
    built, with_git, bundle_store, settings, django_capture_on_commit_callbacks
):
    from bundles.storage import StorageError

    with_git((2, 47, 3))
    settings.BUNDLE_PRESENCE_CACHE_SECONDS = 0
    with mock.patch.object(FileStorage, "size", side_effect=StorageError("down")):
        assert config(built) == [("uploadpack.advertiseBundleURIs", "true")]
    assert (
        Bundle.objects.filter(repository=built, state=BundleState.PUBLISHED).count() == 4
    )  # nothing dropped
    inc = Bundle.objects.get(
        repository=built, state=BundleState.PUBLISHED, flavor=Flavor.ZSTD, kind=Kind.INCREMENTAL
    )
    (bundle_store / inc.storage_key).unlink()
    with (
        mock.patch("bundles.tasks.build_bundles.apply_async") as enqueued,
        django_capture_on_commit_callbacks(execute=True),
    ):
        uris = [v for k, v in config(built) if k.endswith(".uri")]
    assert len(uris) == 1 and "/bundles/public/" in uris[0]  # the base alone, the incremental dropped
    assert Bundle.objects.get(pk=inc.pk).state == BundleState.DELETED
    enqueued.assert_called_once_with((built.pk,))


@pytest.mark.django_db
def test_upload_pack_advertises_the_capability_where_git_has_it(built):
    """Real upload-pack, this machine's git: the capability is there exactly from 2.40."""
    response = Client().get(
        f"/{built.full_name}.git/info/refs?service=git-upload-pack", HTTP_GIT_PROTOCOL="version=2"
    )
    try:
        # Served from the cached probe (gitcore.advertisement), or streamed by git.
        body = b"".join(response.streaming_content) if response.streaming else response.content
    finally:
        response.close()
    assert response.status_code == 200 and b"version 2" in body
    assert (b"bundle-uri" in body) == (git_version() >= NEEDED)


# --- live, git >= 2.40 ---------------------------------------------------------------------


def _bundle_bytes_served(repo) -> int:
    return DailyTransfer.objects.filter(repository=repo).aggregate(n=Sum("bundle_bytes_served"))["n"] or 0


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_clone_uses_advertised_bundles_and_fetch_the_new_incremental(
    world, live_server_url, git_home, tmp_path, bundle_store
):
    require_bundle_uri_git(git_home)
    repo = world.repo
    add_commits(repo.disk_path, tmp_path / "extra", git_home, 3, branch="main", tag="v1")
    services.bundles_build(repo=repo)
    base = Bundle.objects.get(repository=repo, state=BundleState.PUBLISHED, flavor=Flavor.ZSTD)
    repo_url = f"{live_server_url}/{repo.full_name}.git"
    git(git_home, "config", "--global", "protocol.version", "2")

    # Without transfer.bundleURI the client does not ask: nothing comes from bundles.
    _, events = clone(git_home, tmp_path, "plain", repo_url)
    assert bundle_downloads(events) == []

    git(git_home, "config", "--global", "transfer.bundleURI", "true")
    served = _bundle_bytes_served(repo)
    target, events = clone(git_home, tmp_path, "v2", repo_url)
    # No --bundle-uri: upload-pack listed the base, git fetched it (zstd, as curl accepts it).
    assert bundle_downloads(events) == [f"{live_server_url}/bundles/{base.storage_key}"]
    assert base.storage_key.startswith("public/") and base.storage_key.endswith(".zst.bundle")
    assert refs_of(git_home, target, "refs/bundles/main") == {
        "refs/bundles/main": base.tips["refs/heads/main"]
    }
    assert refs_of(git_home, target, "refs/heads", "refs/tags") == refs_of(
        git_home, repo.disk_path, "refs/heads", "refs/tags"
    )
    wait_until(
        lambda: _bundle_bytes_served(repo) - served == base.size,
        timeout=10,
        what=lambda: (
            f"the base bundle counted as served: {_bundle_bytes_served(repo) - served} != {base.size}"
        ),
    )
    token = git(git_home, "--git-dir", str(target), "config", "fetch.bundleCreationToken").stdout.strip()
    assert token == str(base.creation_token)

    # A push, an incremental; the clone's next fetch takes only the incremental.
    pusher = world.owner
    pusher.git("fetch", "--quiet", pusher.remote, "main", check=True)
    pusher.git("reset", "--quiet", "--hard", "FETCH_HEAD", check=True)
    head = pusher.commit("after the base")
    assert pusher.push("main").returncode == 0
    assert services.bundles_build(repo=repo).outcome.kind == Kind.INCREMENTAL
    inc = Bundle.objects.get(
        repository=repo, state=BundleState.PUBLISHED, flavor=Flavor.ZSTD, kind=Kind.INCREMENTAL
    )
    git(git_home, "--git-dir", str(target), "config", "fetch.bundleURI", f"{repo_url}/bundle-list")
    trace = tmp_path / "fetch.trace"
    git({**git_home, "GIT_TRACE2_EVENT": str(trace)}, "--git-dir", str(target), "fetch", "--quiet", "origin")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert bundle_downloads(events) == [f"{live_server_url}/bundles/{inc.storage_key}"]
    assert refs_of(git_home, target, "refs/bundles/main") == {"refs/bundles/main": head}
    token = git(git_home, "--git-dir", str(target), "config", "fetch.bundleCreationToken").stdout.strip()
    assert token == str(inc.creation_token)
    git(git_home, "--git-dir", str(target), "fsck", "--no-progress")
