"""The proposals API: /api/v1/repos/{owner}/{name}/proposals..."""

from __future__ import annotations

import pytest
from django.test import Client

from repos import services as repo_services
from repos.models import Push, Visibility
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
BASE = "/api/v1/repos/owner/project/proposals"


def client_for(user, scope="write") -> Client:
    secret = repo_services.token_create(user=user, scope=scope)[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def feature(scene, *, conflict=False):
    scene.checkout("feature", "main")
    scene.commit("feature", {"a.txt": "one\nTWO\nthree\n" if conflict else "one\ntwo\nthree\nfour\n"})
    head = scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    if conflict:
        scene.commit("main", {"a.txt": "one\n2\nthree\n"})
        scene.publish("main")
    return head


def create(scene, **extra):
    body = {"source_ref": "refs/users/alice/feature", "target_branch": "main", "title": "Four", **extra}
    return client_for(scene.alice).post(BASE, body, content_type="application/json")


def test_open_read_edit_comment_approve_merge(scene):
    head = feature(scene)
    response = create(scene, description="Adds a line.")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["number"], body["state"], body["author"], body["head_sha"], body["revisions"]) == (
        1,
        "open",
        "alice",
        head,
        1,
    )

    anonymous = Client()
    listed = anonymous.get(BASE).json()
    assert [p["number"] for p in listed["results"]] == [1]
    assert anonymous.get(BASE + "?state=merged").json()["results"] == []
    assert anonymous.get(f"{BASE}/1").json()["title"] == "Four"
    assert (
        anonymous.post(f"{BASE}/1/comments", {"body": "hi"}, content_type="application/json").status_code
        == 401
    )

    alice, maint, bob = client_for(scene.alice), client_for(scene.maint), client_for(scene.bob)
    assert (
        alice.patch(f"{BASE}/1", {"title": "Four lines"}, content_type="application/json").json()["title"]
        == "Four lines"
    )
    assert bob.patch(f"{BASE}/1", {"title": "x"}, content_type="application/json").status_code == 403
    comment = bob.post(f"{BASE}/1/comments", {"body": "Nice."}, content_type="application/json")
    assert comment.status_code == 201 and comment.json()["author"] == "bob"
    assert anonymous.get(f"{BASE}/1/comments").json()["results"][0]["body"] == "Nice."

    assert alice.post(f"{BASE}/1/approvals").status_code == 403  # not one's own
    assert bob.post(f"{BASE}/1/approvals").status_code == 403  # readers do not approve
    assert maint.post(f"{BASE}/1/approvals").status_code == 201
    assert anonymous.get(f"{BASE}/1").json()["approvals"] == [
        {"username": "maint", "head_sha": head, "revision": 1, "stale": False}
    ]

    assert (
        alice.post(f"{BASE}/1/merge", {"strategy": "ff"}, content_type="application/json").status_code == 403
    )
    assert bob.post(f"{BASE}/1/merge", {"strategy": "ff"}, content_type="application/json").status_code == 403
    merged = maint.post(f"{BASE}/1/merge", {"strategy": "ff", "sha": head}, content_type="application/json")
    assert merged.status_code == 200, merged.content
    assert merged.json()["sha"] == head == scene.tip("refs/heads/main")
    assert Push.objects.get(pk=merged.json()["push_id"]).protocol == "web"
    detail = anonymous.get(f"{BASE}/1").json()
    assert (detail["state"], detail["merged_by"], detail["merge_strategy"]) == ("merged", "maint", "ff")
    again = maint.post(f"{BASE}/1/merge", {"strategy": "ff"}, content_type="application/json")
    assert again.status_code == 409
    revisions = anonymous.get(f"{BASE}/1/revisions").json()
    assert [(r["number"], r["head_sha"]) for r in revisions] == [(1, head)]


def test_merge_conflict_is_409_with_the_files(scene):
    feature(scene, conflict=True)
    assert create(scene).status_code == 201
    before = scene.tip("refs/heads/main")
    response = client_for(scene.maint).post(
        f"{BASE}/1/merge", {"strategy": "merge"}, content_type="application/json"
    )
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "merge_conflict" and error["fields"]["files"] == ["a.txt"]
    assert scene.tip("refs/heads/main") == before
    stale = client_for(scene.maint).post(
        f"{BASE}/1/merge", {"strategy": "squash", "sha": "a" * 40}, content_type="application/json"
    )
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "head_moved"


@pytest.mark.parametrize(
    "body", [{"strategy": "octopus"}, {"strategy": ["merge"]}, {"strategy": "merge", "sha": "xyz"}]
)
def test_bad_merge_requests_are_400(scene, body):
    feature(scene)
    create(scene)
    response = client_for(scene.maint).post(f"{BASE}/1/merge", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"


def test_hostile_input(scene):
    feature(scene)
    assert create(scene, title="x" * 5000).status_code == 400
    assert create(scene, title="\x00").status_code == 400
    assert create(scene, source_ref="refs/users/bob/feature").status_code in (400, 403)
    client = Client()
    for path in (
        f"{BASE}/0",
        f"{BASE}/99999999999999999999",
        f"{BASE}/-1",
        f"{BASE}/abc",
        f"{BASE}/1/revisions",
    ):
        assert client.get(path).status_code == 404, path
    read_only = client_for(scene.alice, scope="read")
    assert (
        read_only.post(
            BASE,
            {"source_ref": "feature", "target_branch": "main", "title": "t"},
            content_type="application/json",
        ).status_code
        == 403
    )


def test_private_repository_is_404_to_outsiders(scene):
    feature(scene)
    assert create(scene).status_code == 201
    repo_services.repository_update(repo=scene.repo, visibility=Visibility.PRIVATE)
    outsider = client_for(UserFactory(username="mallory"))
    for path in (BASE, f"{BASE}/1", f"{BASE}/1/revisions", f"{BASE}/1/comments"):
        assert outsider.get(path).status_code == 404, path
        assert Client().get(path).status_code == 404, path
    assert (
        outsider.post(f"{BASE}/1/merge", {"strategy": "ff"}, content_type="application/json").status_code
        == 404
    )
    assert outsider.post(f"{BASE}/1/approvals").status_code == 404
    assert client_for(scene.bob).get(f"{BASE}/1").status_code == 200  # a member reads it
