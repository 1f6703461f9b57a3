"""The S3 backend against a real S3-protocol server on loopback (moto_server)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from unittest import mock

import boto3
import pytest

from bundles import services
from bundles.models import Bundle, BundleState, Flavor
from bundles.s3 import S3Storage
from bundles.storage import CONTENT_TYPE, IMMUTABLE, file_digest
from tests import live
from tests.bundles.conftest import add_commits, refs_of
from tests.eager import run_followers
from tests.factories import RepositoryFactory
from tests.gitutil import git

pytestmark = pytest.mark.django_db
BUCKET = "hostsite-bundles"


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory):
    port = live.free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        live.wait_for_http(url, proc=proc, timeout=60)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture
def s3(moto_endpoint, monkeypatch, settings):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=moto_endpoint)
    client.create_bucket(Bucket=BUCKET)
    # Public repositories' bundles are fetched anonymously (from the bucket or a CDN in front
    # of it): the operator grants public read on public/ only, as README says.
    client.put_bucket_policy(
        Bucket=BUCKET,
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": "*",
                        "Action": "s3:GetObject",
                        "Resource": f"arn:aws:s3:::{BUCKET}/b/public/*",
                    }
                ],
            }
        ),
    )
    settings.BUNDLE_STORAGE = {
        "backend": "s3",
        "bucket": BUCKET,
        "prefix": "b",
        "endpoint_url": moto_endpoint,
    }
    yield client
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    client.delete_bucket(Bucket=BUCKET)


def test_multipart_upload_with_headers(s3, moto_endpoint, tmp_path):
    storage = S3Storage(
        bucket=BUCKET, prefix="b", endpoint_url=moto_endpoint, multipart_threshold=5 * 1024 * 1024
    )
    path = tmp_path / "big"
    path.write_bytes(os.urandom(12 * 1024 * 1024 + 17))  # three parts (S3's minimum part is 5 MiB)
    digest = file_digest(path)
    key = f"{digest.sha256}.zst.bundle"
    storage.put(key, path, content_type=CONTENT_TYPE, content_encoding="zstd")

    head = s3.head_object(Bucket=BUCKET, Key=f"b/{key}")
    assert head["ETag"].strip('"').endswith("-3")  # S3's mark of a three-part upload
    assert (head["ContentType"], head["ContentEncoding"], head["CacheControl"]) == (
        CONTENT_TYPE,
        "zstd",
        IMMUTABLE,
    )
    assert storage.size(key) == digest.size and storage.digest(key) == digest
    storage.delete(key)
    assert storage.size(key) is None and storage.digest(key) is None


def test_build_publishes_to_s3_and_git_clones_from_it(s3, moto_endpoint, git_home, tmp_path, client):
    """The zstd object goes out with Content-Encoding: zstd and comes back through git (curl
    decodes it), straight from the S3 endpoint."""
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 3, tag="v1")
    assert services.bundles_build(repo=repo).status == "built"
    zstd = Bundle.objects.get(repository=repo, flavor=Flavor.ZSTD, state=BundleState.PUBLISHED)
    head = s3.head_object(Bucket=BUCKET, Key=f"b/{zstd.storage_key}")
    assert head["ContentEncoding"] == "zstd" and head["ContentLength"] == zstd.size

    response = client.get(f"/{repo.full_name}.git/bundle-list", HTTP_ACCEPT_ENCODING="gzip, zstd")
    body = response.content.decode()
    uri = f"{moto_endpoint}/{BUCKET}/b/{zstd.storage_key}"
    assert response.status_code == 200 and f"uri = {uri}" in body
    with urllib.request.urlopen(uri, timeout=30) as got:
        assert got.headers["Content-Encoding"] == "zstd" and len(got.read()) == zstd.size

    saved = tmp_path / "list"
    saved.write_text(body)
    trace = tmp_path / "trace"
    target = tmp_path / "clone.git"
    # file:// runs upload-pack as a server would; the bundles are applied before it is asked.
    git(
        {**git_home, "GIT_TRACE2_EVENT": str(trace)},
        "clone",
        "--bare",
        "--quiet",
        f"--bundle-uri={saved}",
        f"file://{repo.disk_path}",
        str(target),
    )
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert any(uri in e.get("argv", []) for e in events if e.get("event") == "child_start")
    # git keeps the bundle's branches under refs/bundles/, the tag's anchor (packing.TAG_ANCHORS) too.
    assert refs_of(git_home, target, "refs/bundles") == {
        "refs/bundles/main": zstd.tips["refs/heads/main"],
        "refs/bundles/bundle-tags/v1": zstd.tips["refs/tags/v1"],
    }
    assert refs_of(git_home, target, "refs/heads", "refs/tags") == refs_of(git_home, repo.disk_path)
    git(git_home, "--git-dir", str(target), "fsck", "--no-progress")


def test_storage_down_lists_no_bundles(s3, moto_endpoint, git_home, tmp_path, client, settings):
    repo = RepositoryFactory()
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    services.bundles_build(repo=repo)
    settings.BUNDLE_STORAGE = {
        **settings.BUNDLE_STORAGE,
        "endpoint_url": f"http://127.0.0.1:{live.free_port()}",
    }
    response = client.get(f"/{repo.full_name}/bundle-list", HTTP_ACCEPT_ENCODING="zstd")
    assert response.status_code == 200 and "uri =" not in response.content.decode()
    # Unreachable is not missing: nothing was dropped.
    assert Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).count() == 2


def test_private_repository_gets_presigned_urls(s3, moto_endpoint, git_home, tmp_path, client):
    from repos.models import Visibility

    repo = RepositoryFactory(visibility=Visibility.PRIVATE)
    add_commits(repo.disk_path, tmp_path / "work", git_home, 1)
    services.bundles_build(repo=repo)
    assert client.get(f"/{repo.full_name}/bundle-list").status_code == 401
    from repos.services import token_create

    secret = token_create(user=repo.owner, scope="read")[1]
    auth = "Basic " + base64.b64encode(f"{repo.owner.username}:{secret}".encode()).decode()
    response = client.get(
        f"/{repo.full_name}/bundle-list", HTTP_AUTHORIZATION=auth, HTTP_ACCEPT_ENCODING="zstd"
    )
    uri = next(
        line.split("=", 1)[1].strip() for line in response.content.decode().splitlines() if "uri =" in line
    )
    assert "X-Amz-Signature=" in uri and "X-Amz-Expires=3600" in uri
    with urllib.request.urlopen(uri, timeout=30) as got:
        zstd = Bundle.objects.get(repository=repo, flavor=Flavor.ZSTD, state=BundleState.PUBLISHED)
        assert got.headers["Content-Encoding"] == "zstd" and len(got.read()) == zstd.size


def anonymous_get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as got:
            got.read()
            return got.status
    except urllib.error.HTTPError as exc:
        return exc.code


def object_names(s3, area: str) -> set[str]:
    found = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"b/{area}/").get("Contents", [])
    return {obj["Key"] for obj in found}


def basic_auth(repo) -> str:
    from repos.services import token_create

    secret = token_create(user=repo.owner, scope="read")[1]
    return "Basic " + base64.b64encode(f"{repo.owner.username}:{secret}".encode()).decode()


def listed_uris(client, repo, **headers) -> list[str]:
    response = client.get(f"/{repo.full_name}.git/bundle-list", HTTP_ACCEPT_ENCODING="zstd", **headers)
    assert response.status_code == 200
    return [
        line.split("=", 1)[1].strip() for line in response.content.decode().splitlines() if "uri =" in line
    ]


def test_public_and_private_repositories_use_separate_areas(s3, moto_endpoint, git_home, tmp_path, client):
    from repos.models import Visibility

    public = RepositoryFactory()
    private = RepositoryFactory(visibility=Visibility.PRIVATE)
    for repo in (public, private):
        add_commits(repo.disk_path, tmp_path / f"work-{repo.pk}", git_home, 2)
        services.bundles_build(repo=repo)
    public_keys = {f"b/{row.storage_key}" for row in Bundle.objects.filter(repository=public)}
    private_keys = {f"b/{row.storage_key}" for row in Bundle.objects.filter(repository=private)}
    assert len(public_keys) == len(private_keys) == 2
    assert object_names(s3, "public") == public_keys and object_names(s3, "private") == private_keys

    # The bucket policy makes public/ readable by anyone, and nothing else.
    for uri in listed_uris(client, public):
        assert uri.startswith(f"{moto_endpoint}/{BUCKET}/b/public/") and anonymous_get(uri) == 200
    for key in private_keys:
        assert anonymous_get(f"{moto_endpoint}/{BUCKET}/{key}") == 403
    uris = listed_uris(client, private, HTTP_AUTHORIZATION=basic_auth(private))
    assert len(uris) == 1 and f"/{BUCKET}/b/private/" in uris[0] and "X-Amz-Signature=" in uris[0]
    assert anonymous_get(uris[0]) == 200  # the signed URL is the way in


def test_public_to_private_deletes_public_objects_at_once(
    s3, moto_endpoint, git_home, tmp_path, client, django_capture_on_commit_callbacks, monkeypatch
):
    from repos import services as repo_services
    from repos.models import Visibility

    repo = RepositoryFactory()
    work = tmp_path / "work"
    add_commits(repo.disk_path, work, git_home, 2)
    services.bundles_build(repo=repo)
    add_commits(repo.disk_path, work, git_home, 1)
    services.bundles_build(repo=repo)  # an incremental: four public objects
    old_uris = listed_uris(client, repo)
    assert len(old_uris) == 2 and all(anonymous_get(uri) == 200 for uri in old_uris)
    assert len(object_names(s3, "public")) == 4

    run_followers(monkeypatch)  # the move is a task; the build it queues is mocked
    with (
        mock.patch("bundles.tasks.build_bundles.apply_async") as enqueue,
        django_capture_on_commit_callbacks(execute=True),
    ):
        repo_services.repository_update(repo=repo, visibility=Visibility.PRIVATE)
    # No grace period: the public objects are gone, and nothing of the old area is listed.
    assert object_names(s3, "public") == set()
    assert all(anonymous_get(uri) in (403, 404) for uri in old_uris)
    auth = basic_auth(repo)
    assert listed_uris(client, repo, HTTP_AUTHORIZATION=auth) == []
    assert not Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).exists()
    assert not Bundle.objects.filter(repository=repo, storage_key__startswith="public/").exists()
    # A build into the private area was queued; it runs, and the list is back, signed.
    (args,), _ = enqueue.call_args
    assert args[0] == repo.pk
    assert services.repositories_due_for_bundles().filter(pk=repo.pk).exists()
    assert services.bundles_build(repo=repo).outcome.kind == "base"
    uris = listed_uris(client, repo, HTTP_AUTHORIZATION=auth)
    assert len(uris) == 1 and f"/{BUCKET}/b/private/" in uris[0] and "X-Amz-Signature=" in uris[0]
    assert len(object_names(s3, "private")) == 2 and object_names(s3, "public") == set()
