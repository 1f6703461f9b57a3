"""The Bundles page and the offload counters, fed by real clones through the live server."""

from __future__ import annotations

import re
import subprocess

import pytest
from django.test import Client

from bundles import services
from bundles.models import BundleBuild
from repos.models import DailyTransfer

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def transfer(world) -> DailyTransfer:
    return DailyTransfer.objects.get(repository=world.repo)


def test_clones_count_toward_git_bytes_and_bundle_bytes(world, bundle_store, tmp_path):
    url = f"http://{world.host}/owner/project.git"
    subprocess.run(["git", "clone", "--quiet", url, str(tmp_path / "plain")], env=world.env, check=True)
    plain = transfer(world)
    assert plain.git_requests >= 1 and plain.git_bytes > 0 and plain.bundle_bytes_served == 0
    services.bundles_build(repo=world.repo)
    subprocess.run(
        ["git", "clone", "--quiet", f"--bundle-uri={url}/bundle-list", url, str(tmp_path / "fast")],
        env=world.env,
        check=True,
    )
    after = transfer(world)
    assert after.bundle_list_requests >= 1 and after.bundle_bytes_listed > 0
    assert after.bundle_bytes_served > 0  # the file backend served the object itself

    page = Client().get("/owner/project/bundles").content.decode()
    assert "of clone and fetch bytes came from bundles" in page
    assert "<svg" in page and page.count('class="bar-bundle"') == 30
    share = float(re.search(r"<strong>([0-9.]+)%</strong>", page)[1])
    assert 0 < share < 100


def test_page_lists_bundles_and_builds_and_shows_progress(world, bundle_store):
    services.bundles_build(repo=world.repo)
    page = Client().get("/owner/project/bundles").content.decode()
    assert "standard flavor" in page and "zstd flavor" in page and "base" in page
    assert "succeeded" in page and 'http-equiv="refresh"' not in page
    BundleBuild.objects.create(repository=world.repo, progress="packing the base bundle")
    page = Client().get("/owner/project/bundles").content.decode()
    assert 'http-equiv="refresh"' in page and "packing the base bundle" in page


def test_build_now_is_for_admins(world, bundle_store, settings):
    owner = Client()
    owner.force_login(world.owner.user)
    assert "Build now" in owner.get("/owner/project/bundles").content.decode()
    stranger = Client()
    stranger.force_login(world.add("eve").user)
    assert "Build now" not in stranger.get("/owner/project/bundles").content.decode()
    assert stranger.post("/owner/project/bundles/build").status_code == 404


def test_private_repository_bundles_page_is_404(world):
    world.repo.visibility = "private"
    world.repo.save()
    assert Client().get("/owner/project/bundles").status_code == 404


def test_base_url_is_chosen_per_client_network(world, bundle_store, settings):
    from hostsite.env import cidr_url_table

    services.bundles_build(repo=world.repo)
    settings.BUNDLE_BASE_URLS = cidr_url_table(
        "192.0.2.0/24=https://region.example/mirror/ 0.0.0.0/0=https://cdn.example/"
    )
    in_region = Client(REMOTE_ADDR="192.0.2.10").get("/owner/project.git/bundle-list").content.decode()
    elsewhere = Client(REMOTE_ADDR="203.0.113.7").get("/owner/project.git/bundle-list").content.decode()
    uris = [re.findall(r"uri = (\S+)", text) for text in (in_region, elsewhere)]
    assert uris[0] and all(u.startswith("https://region.example/mirror/bundles/") for u in uris[0])
    assert uris[1] and all(u.startswith("https://cdn.example/bundles/") for u in uris[1])
    # Private repositories never go to a shared mirror: their objects need an access check.
    world.repo.visibility = "private"
    world.repo.save()
    services.bundles_build(repo=world.repo)  # into the private area
    import base64

    auth = "Basic " + base64.b64encode(f"owner:{world.owner.token}".encode()).decode()
    private = Client(REMOTE_ADDR="192.0.2.10").get("/owner/project.git/bundle-list", HTTP_AUTHORIZATION=auth)
    assert private.status_code == 200
    uris = re.findall(r"uri = (\S+)", private.content.decode())
    assert uris and all(u.startswith("http://testserver/bundles/private/") for u in uris)
