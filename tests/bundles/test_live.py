"""Bundle lists and objects over real HTTP (gunicorn), applied by a real `git clone --bundle-uri`."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from bundles import services
from bundles.models import Bundle, BundleState, Flavor
from repos import services as repo_services
from repos.models import Repository, Visibility
from tests.bundles.conftest import add_commits, refs_of
from tests.factories import UserFactory
from tests.gitutil import git

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def list_uris(body: bytes) -> list[str]:
    return [
        line.split("=", 1)[1].strip() for line in body.decode().splitlines() if line.strip().startswith("uri")
    ]


def clone(env, tmp_path, name, url, *extra):
    """Clone with trace2 and packet tracing on; (refs of the clone, trace events)."""
    target = tmp_path / name
    trace = tmp_path / f"{name}.trace"
    packets = tmp_path / f"{name}.packets"
    result = git(
        {**env, "GIT_TRACE2_EVENT": str(trace), "GIT_TRACE_PACKET": str(packets)},
        "clone",
        "--bare",
        "--quiet",
        *extra,
        url,
        str(target),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    git(env, "--git-dir", str(target), "fsck", "--no-progress")
    events = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
    return target, events


def fetch_requests(tmp_path, name) -> int:
    """protocol v2 `fetch` commands the clone sent to the origin (its negotiation rounds)."""
    return (tmp_path / f"{name}.packets").read_text(errors="replace").count("> command=fetch")


def bundle_downloads(events) -> list[str]:
    """URIs git fetched bundles from (2.39 runs `git remote-https` with a `get` per bundle)."""
    return [
        e["argv"][-1]
        for e in events
        if e.get("event") == "child_start"
        and "remote-https" in " ".join(e.get("argv", []))
        and "/bundles/" in e["argv"][-1]
    ]


@pytest.fixture
def project(world, git_home, tmp_path, bundle_store):
    """owner/project on the live server with a few branches and a tag."""
    add_commits(world.repo.disk_path, tmp_path / "extra", git_home, 4, branch="main", tag="v1")
    add_commits(world.repo.disk_path, tmp_path / "extra", git_home, 2, branch="topic")
    return world


def test_clone_with_bundle_uri_in_both_flavors(project, live_server_url, git_home, tmp_path):
    repo = project.repo
    services.bundles_build(repo=repo)
    list_url = f"{live_server_url}/{repo.full_name}.git/bundle-list"
    repo_url = f"{live_server_url}/{repo.full_name}.git"

    status, zstd_list, headers = fetch(list_url, {"Accept-Encoding": "deflate, gzip, br, zstd"})
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert "heuristic = creationToken" in zstd_list.decode() and "mode = all" in zstd_list.decode()
    status, standard_list, _ = fetch(list_url.removesuffix(".git/bundle-list") + "/bundle-list")
    assert status == 200
    zstd_uris, standard_uris = list_uris(zstd_list), list_uris(standard_list)
    assert len(zstd_uris) == len(standard_uris) == 1 and zstd_uris != standard_uris
    assert zstd_uris[0].startswith(f"{live_server_url}/bundles/") and zstd_uris[0].endswith(".zst.bundle")

    plain, _ = clone(git_home, tmp_path, "plain", repo_url)
    expected = refs_of(git_home, plain)

    # git 2.39 asks with Accept-Encoding: ..., zstd, so it gets the zstd flavor.
    zstd_clone, events = clone(git_home, tmp_path, "zstd", repo_url, f"--bundle-uri={list_url}")
    assert bundle_downloads(events) == zstd_uris
    assert refs_of(git_home, zstd_clone, "refs/heads", "refs/tags") == expected
    assert refs_of(git_home, zstd_clone, "refs/bundles")  # what the bundle brought
    # The annotated tag came with the bundle and a ref to it: the origin is not asked for it.
    assert fetch_requests(tmp_path, "plain") == 1 and fetch_requests(tmp_path, "zstd") == 0
    tag = expected["refs/tags/v1"]
    assert refs_of(git_home, zstd_clone, "refs/bundles/bundle-tags") == {"refs/bundles/bundle-tags/v1": tag}

    # The standard flavor: the list a client without zstd gets, handed to git as a file.
    saved = tmp_path / "standard-list"
    saved.write_bytes(standard_list)
    std_clone, events = clone(git_home, tmp_path, "std", repo_url, f"--bundle-uri={saved}")
    assert bundle_downloads(events) == standard_uris
    assert refs_of(git_home, std_clone, "refs/heads", "refs/tags") == expected
    assert refs_of(git_home, std_clone, "refs/bundles")


def test_base_plus_incremental_clone_equals_plain_clone(project, live_server_url, git_home, tmp_path):
    repo = project.repo
    services.bundles_build(repo=repo)
    pusher = project.owner
    pusher.git("fetch", "--quiet", pusher.remote, "main", check=True)
    pusher.git("reset", "--quiet", "--hard", "FETCH_HEAD", check=True)
    pusher.commit("after the base")
    assert pusher.push("main").returncode == 0
    assert services.bundles_build(repo=repo).outcome.kind == "incremental"

    list_url = f"{live_server_url}/{repo.full_name}/bundle-list"
    status, body, _ = fetch(list_url, {"Accept-Encoding": "zstd"})
    assert status == 200 and len(list_uris(body)) == 2
    repo_url = f"{live_server_url}/{repo.full_name}.git"
    plain, _ = clone(git_home, tmp_path, "plain", repo_url)
    bundled, events = clone(git_home, tmp_path, "bundled", repo_url, f"--bundle-uri={list_url}")
    assert sorted(bundle_downloads(events)) == sorted(list_uris(body))
    assert refs_of(git_home, bundled, "refs/heads", "refs/tags") == refs_of(git_home, plain)
    # git 2.39 keeps what the bundles brought under refs/bundles/<branch>: the incremental's
    # main, applied on top of the base.
    assert refs_of(git_home, bundled, "refs/bundles/main") == {
        "refs/bundles/main": pusher.git("rev-parse", "HEAD").stdout.strip()
    }


def test_object_headers_and_ranges(project, live_server_url):
    services.bundles_build(repo=project.repo)
    zstd = Bundle.objects.get(repository=project.repo, flavor=Flavor.ZSTD, state=BundleState.PUBLISHED)
    url = f"{live_server_url}/bundles/{zstd.storage_key}"
    status, body, headers = fetch(url)
    assert status == 200 and len(body) == zstd.size
    assert headers["Content-Type"] == "application/x-git-bundle"
    assert headers["Content-Encoding"] == "zstd"
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert headers["Accept-Ranges"] == "bytes"

    status, part, headers = fetch(url, {"Range": "bytes=10-19"})
    assert status == 206 and part == body[10:20]
    assert headers["Content-Range"] == f"bytes 10-19/{zstd.size}"
    status, tail, _ = fetch(url, {"Range": "bytes=-5"})
    assert status == 206 and tail == body[-5:]
    status, _, headers = fetch(url, {"Range": f"bytes={zstd.size}-"})
    assert status == 416 and headers["Content-Range"] == f"bytes */{zstd.size}"

    standard = Bundle.objects.get(
        repository=project.repo, flavor=Flavor.STANDARD, state=BundleState.PUBLISHED
    )
    status, body, headers = fetch(f"{live_server_url}/bundles/{standard.storage_key}")
    assert status == 200 and "Content-Encoding" not in headers and body.startswith(b"# v2 git bundle\n")
    assert fetch(f"{live_server_url}/bundles/{'0' * 64}.bundle")[0] == 404


def test_missing_object_is_dropped_from_the_list(project, live_server_url, bundle_store):
    services.bundles_build(repo=project.repo)
    zstd = Bundle.objects.get(repository=project.repo, flavor=Flavor.ZSTD, state=BundleState.PUBLISHED)
    (bundle_store / zstd.storage_key).unlink()
    status, body, _ = fetch(
        f"{live_server_url}/{project.repo.full_name}/bundle-list", {"Accept-Encoding": "zstd"}
    )
    assert status == 200 and list_uris(body) == []
    assert Bundle.objects.get(pk=zstd.pk).state == BundleState.DELETED
    # The next build puts a complete generation back.
    assert services.bundles_build(repo=project.repo).outcome.kind == "base"
    status, body, _ = fetch(
        f"{live_server_url}/{project.repo.full_name}/bundle-list", {"Accept-Encoding": "zstd"}
    )
    assert len(list_uris(body)) == 1


def test_private_repository_needs_credentials(project, live_server_url, git_home, tmp_path):
    repo = project.repo
    Repository.objects.filter(pk=repo.pk).update(visibility=Visibility.PRIVATE)
    services.bundles_build(repo=repo)
    zstd = Bundle.objects.get(repository=repo, flavor=Flavor.ZSTD, state=BundleState.PUBLISHED)
    list_url = f"{live_server_url}/{repo.full_name}.git/bundle-list"
    object_url = f"{live_server_url}/bundles/{zstd.storage_key}"

    for url in (list_url, object_url):
        status, _, headers = fetch(url, {"Accept-Encoding": "zstd"})
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")

    owner = project.owner
    auth = {
        "Authorization": "Basic " + base64.b64encode(f"owner:{owner.token}".encode()).decode(),
        "Accept-Encoding": "zstd",
    }
    status, body, headers = fetch(list_url, auth)
    assert status == 200 and list_uris(body) == [object_url] and "private" in headers["Cache-Control"]
    status, body, headers = fetch(object_url, auth)
    assert status == 200 and len(body) == zstd.size and headers["Cache-Control"] == "private, no-store"

    # Someone signed in without access: not found, as for git.
    stranger = UserFactory(username="stranger")
    token = repo_services.token_create(user=stranger, scope="read")[1]
    other = {"Authorization": "Basic " + base64.b64encode(f"stranger:{token}".encode()).decode()}
    assert fetch(list_url, other)[0] == 404
    assert fetch(object_url, other)[0] == 404

    # An anonymous clone with --bundle-uri still fails only where the repository itself does.
    result = git(
        git_home,
        "clone",
        "--bare",
        f"--bundle-uri={list_url}",
        f"{live_server_url}/{repo.full_name}.git",
        str(tmp_path / "anon"),
        check=False,
    )
    assert result.returncode != 0
