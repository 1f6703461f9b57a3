"""Removing refs by push with real git through the live server, next to the API: an admin deletes
any ref outside workspaces and the platform's own namespaces; maintainers and contributors cannot;
refs/archive/ and refs/takedown/ stay whoever pushes; refs/imported/ is never advertised (git
refuses it as a hidden ref), so only the web and the API remove it. Refs are written on disk,
where an import or a mirror leaves them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from gitcore.git import run_git
from repos import services
from repos.models import Push

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
ZERO = "0" * 40
SPECIAL = (
    "refs/pull/1/head",
    "refs/pull/2/head",
    "refs/keep-around/k",
    "refs/takedown/bob/y",
    "refs/archive/bob/1",
    "refs/imported/pull/3/head",
)


@pytest.fixture
def scene(world):
    world.mia = world.add("mia", "maintainer")
    world.carl = world.add("carl")  # a contributor: reads the public repository, pushes to his workspace
    lines = "".join(f"update {ref} {world.base_sha}\n" for ref in SPECIAL)
    run_git(["update-ref", "--stdin"], repo=world.repo.disk_path, input=lines.encode())
    return world


def pushes(world) -> list[Push]:
    return list(Push.objects.filter(repository=world.repo).exclude(pk=Push.objects.order_by("pk").first().pk))


def test_an_admin_deletes_any_ref_by_push_and_it_is_recorded(scene):
    owner = scene.owner
    result = owner.push(":refs/pull/1/head", ":refs/keep-around/k")
    assert result.returncode == 0, result.stderr
    refs = scene.refs()
    assert "refs/pull/1/head" not in refs and "refs/keep-around/k" not in refs
    [push] = pushes(scene)
    assert (push.pusher, push.protocol) == (owner.user, "http")
    assert {(u.ref, u.old, u.new) for u in push.ref_updates.all()} == {
        ("refs/pull/1/head", scene.base_sha, ZERO),
        ("refs/keep-around/k", scene.base_sha, ZERO),
    }


def test_maintainers_and_contributors_cannot(scene):
    for pusher in (scene.mia, scene.carl):
        result = pusher.push(":refs/pull/2/head")
        assert result.returncode != 0
        assert (
            "remote: hostsite: refs/pull/2/head is not a ref you can push to: only the repository's admins "
            "may delete it"
        ) in result.stderr
    result = scene.carl.push(f"+{scene.base_sha}:refs/pull/2/head")
    assert (
        result.returncode != 0
        and "remote: hostsite: refs/pull/2/head is not a ref you can push to" in result.stderr
    )
    assert scene.refs()["refs/pull/2/head"] == scene.base_sha and not pushes(scene)


def test_the_platform_s_refs_stay_whoever_pushes(scene):
    for pusher in (scene.owner, scene.mia, scene.carl):
        for ref in ("refs/takedown/bob/y", "refs/archive/bob/1"):
            result = pusher.push(f":{ref}")
            assert result.returncode != 0, result.stderr
            assert (
                f"remote: hostsite: {ref} is not a ref you can push to: it belongs to the platform"
                in result.stderr
            )
            # Named as a write, git refuses the hidden ref itself.
            result = pusher.push(f"+{scene.base_sha}:{ref}")
            assert result.returncode != 0, result.stderr
    refs = scene.refs()
    assert refs["refs/takedown/bob/y"] == refs["refs/archive/bob/1"] == scene.base_sha and not pushes(scene)


def api(world, method: str, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://{world.host}/api/v1/repos/{world.repo.full_name}/{path}",
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_imported_refs_are_removed_on_the_api_not_by_push(scene):
    result = scene.owner.push(":refs/imported/pull/3/head")
    assert result.returncode != 0 and "deny deleting a hidden ref" in result.stdout
    assert "refs/imported/pull/3/head" in scene.refs()

    status, body = api(scene, "GET", "refs?prefix=refs/imported/", scene.mia.token)
    assert status == 403 and body["error"]["code"] == "permission_denied"
    status, body = api(scene, "GET", "refs?prefix=refs/imported/", scene.owner.token)
    assert status == 200 and [r["ref"] for r in body["results"]] == ["refs/imported/pull/3/head"]
    status, _ = api(scene, "DELETE", "refs/imported/pull/3/head", scene.owner.token)
    assert status == 204 and "refs/imported/pull/3/head" not in scene.refs()
    status, body = api(scene, "POST", "refs/remove", scene.owner.token, {"prefix": "refs/pull/"})
    assert status == 200 and body["removed"] == 2
    recorded = pushes(scene)
    assert [p.protocol for p in recorded] == ["api", "api"]
    assert [u.ref for u in recorded[0].ref_updates.all()] == ["refs/imported/pull/3/head"]
    # The pushlog shows the removals, as it shows pushes.
    status, body = api(scene, "GET", "pushes", services.token_create(user=scene.carl.user, scope="read")[1])
    assert status == 200 and body["results"][0]["id"] == recorded[-1].pk
