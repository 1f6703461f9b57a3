"""Ref names that are not UTF-8, as an imported history brings them (`caf\\xe9` in Latin-1, a
tag of two stray bytes, a workspace ref): every page and API that lists refs answers, showing
the bytes as `\\xNN` escapes (or U+FFFD where a name is data, as the push log records it); an
admin removes them with their namespace and the removal is recorded. Pushes of such names are
refused (tests/repos/test_ref_names_live.py, tests/repos/test_hook_inputs.py)."""

from __future__ import annotations

import os
import subprocess

import pytest
from django.test import Client
from rest_framework.test import APIClient

from gitcore.git import run_git
from repos.audit import Action
from repos.models import AuditEntry, Push
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

BRANCH = b"caf\xe9"
TAG = b"\xff\xfe-rel"
WORKSPACE = b"refs/users/alice/caf\xe9"


@pytest.fixture
def scene(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    first = work.commit("first", {"a.txt": "a\n"})
    for args in ([b"branch", BRANCH], [b"tag", TAG]):
        subprocess.run([b"git", b"-C", bytes(work.path), *args], env=git_home, check=True)
    work.git("checkout", "--quiet", "-b", "alice")
    second = work.commit("alice's work", {"b.txt": "b\n"})
    work.git("checkout", "--quiet", "main")
    repo = work.publish(owner="olga", name="proj")
    # Her branch of the import, moved into her workspace under a name that is not UTF-8.
    run_git(["update-ref", os.fsdecode(WORKSPACE), second], repo=repo.disk_path)
    run_git(["update-ref", "-d", "refs/heads/alice"], repo=repo.disk_path)
    return {"repo": repo, "alice": UserFactory(username="alice"), "first": first, "second": second}


PAGES = [
    "/olga/proj",
    "/olga/proj/branches",
    "/olga/proj/tags",
    "/olga/proj/refs.json",
    "/olga/proj/work",
    "/olga/proj/work.txt",
    "/olga/proj/workspaces",
    "/olga/proj/workspaces/alice",
    "/olga/proj/pushlog",
    "/olga/proj/json-pushes",
    "/olga/proj/pushlog.atom",
    "/api/v1/repos/olga/proj/pushes",
]
ADMIN_PAGES = [
    "/olga/proj/settings/refs",
    "/olga/proj/settings/refs?prefix=refs/heads",
    "/olga/proj/settings/refs?prefix=refs/tags",
    "/api/v1/repos/olga/proj/refs",
    "/api/v1/repos/olga/proj/refs?prefix=refs/tags/",
]


@pytest.mark.parametrize("who", [None, "alice", "olga"])
def test_every_page_listing_refs_answers(scene, who):
    client = Client()
    if who:
        client.force_login(scene["alice"] if who == "alice" else scene["repo"].owner)
    for url in PAGES + (ADMIN_PAGES if who == "olga" else []):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    if who == "alice":
        work = client.get("/olga/proj/work.txt").content.decode()
        assert "alice's work" in work and "alice/caf\ufffd" in work  # her workspace ref, by its text


def test_the_names_show_their_bytes_escaped_or_as_data(scene):
    owner = Client()
    owner.force_login(scene["repo"].owner)
    page = owner.get("/olga/proj/settings/refs?prefix=refs/heads").content.decode()
    assert 'caf<span class="invisible-char" title="byte 0xe9, not UTF-8">\\xe9</span>' in page
    assert "not UTF-8: delete it by a push" in page  # no form can name it
    tags = owner.get("/olga/proj/settings/refs?prefix=refs/tags").content.decode()
    assert "\\xff</span>" in tags and "\\xfe</span>-rel" in tags
    api = APIClient()
    api.force_authenticate(scene["repo"].owner)
    refs = {r["ref"] for r in api.get("/api/v1/repos/olga/proj/refs").json()["results"]}
    assert refs == {"refs/heads/caf\ufffd", "refs/heads/main", "refs/tags/\ufffd\ufffd-rel"}
    # As the import recorded them.
    imported = Push.objects.get(repository=scene["repo"])
    assert {u.ref for u in imported.ref_updates.all()} == refs | {"refs/heads/alice"}


def test_an_admin_removes_them_with_their_namespace_and_the_removal_is_recorded(scene):
    repo = scene["repo"]
    owner = Client()
    owner.force_login(repo.owner)
    for prefix in ("refs/tags/", "refs/heads/caf"):
        response = owner.post(
            "/olga/proj/settings/refs",
            {"action": "remove_namespace", "prefix": prefix, "confirm": prefix},
        )
        assert response.status_code == 302
    # refs/heads/caf is no namespace: only a ref of that exact name would go.
    left = run_git(["for-each-ref", "--format=%(refname)"], repo=repo.disk_path).stdout
    assert b"refs/tags/" not in left and b"refs/heads/" + BRANCH in left
    removal = Push.objects.filter(repository=repo, protocol="web").get()
    assert [(u.ref, u.old) for u in removal.ref_updates.all()] == [
        ("refs/tags/\ufffd\ufffd-rel", scene["first"])
    ]
    audit = AuditEntry.objects.get(action=Action.REF_REMOVE, repository=repo)
    assert audit.detail["refs"] == {"refs/tags/\ufffd\ufffd-rel": scene["first"]}
