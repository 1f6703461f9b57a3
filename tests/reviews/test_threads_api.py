"""The threads API: /api/v1/repos/{owner}/{name}/proposals/{number}/threads..."""

from __future__ import annotations

import pytest
from django.test import Client

from repos import services as repo_services
from repos.models import Visibility
from reviews.models import Thread
from tests.factories import UserFactory
from tests.reviews.threads_util import TEN, propose, revise

pytestmark = pytest.mark.django_db
BASE = "/api/v1/repos/owner/project/proposals/1/threads"


def client_for(user, scope="write") -> Client:
    secret = repo_services.token_create(user=user, scope=scope)[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def post(client, url, body):
    return client.post(url, body, content_type="application/json")


def test_open_list_reply_resolve(scene):
    proposal = propose(scene)
    bob, alice = client_for(scene.bob), client_for(scene.alice)
    created = post(bob, BASE, {"path": "code.txt", "line_start": 5, "line_end": 6, "body": "Hm?"})
    assert created.status_code == 201, created.content
    thread = created.json()
    assert (thread["revision"], thread["side"], thread["line_start"], thread["line_end"]) == (1, "new", 5, 6)
    assert thread["comments"][0]["author"] == "bob" and thread["original_lines"][0] == [2, "line 2"]
    assert thread["latest"] == {
        "revision": 1,
        "path": "code.txt",
        "line_start": 5,
        "line_end": 6,
        "outdated": False,
    }

    reply = post(alice, f"{BASE}/{thread['id']}/comments", {"body": "Fixed."})
    assert reply.status_code == 201 and reply.json()["author"] == "alice"
    resolved = alice.patch(f"{BASE}/{thread['id']}", {"resolved": True}, content_type="application/json")
    assert resolved.status_code == 200 and resolved.json()["resolved"] is True
    assert resolved.json()["resolved_by"] == "alice"

    revise(scene, proposal, {"code.txt": "new\n" + TEN.replace("line 6\n", "six\n")})
    post(bob, BASE, {"path": "code.txt", "line_start": 2, "body": "And this?"})
    listed = Client().get(BASE).json()  # anonymous readers of a public repository
    assert [t["latest"]["outdated"] for t in listed] == [True, False]
    assert listed[1]["latest"]["revision"] == 2 and listed[1]["revision"] == 2
    assert [c["body"] for c in listed[0]["comments"]] == ["Hm?", "Fixed."]
    # Line comments are not the proposal's own comments.
    assert Client().get("/api/v1/repos/owner/project/proposals/1/comments").json()["results"] == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"path": "code.txt", "line_start": 99, "body": "x"}, 400),
        ({"path": "code.txt", "line_start": 1, "line_end": 900, "body": "x"}, 400),
        ({"path": "missing.txt", "line_start": 1, "body": "x"}, 404),
        ({"path": "code.txt", "line_start": 1, "body": "x", "revision": 7}, 404),
        ({"path": "code.txt", "line_start": 1, "body": "x", "side": "middle"}, 400),
        ({"path": "code.txt", "line_start": "one", "body": "x"}, 400),
        ({"path": "code.txt", "line_start": 1, "body": ""}, 400),
        ({"path": "code.txt", "line_start": 1, "body": "x" * 50_000}, 400),
        ({"line_start": 1, "body": "x"}, 400),
    ],
)
def test_bad_input_is_refused(scene, body, status):
    propose(scene)
    response = post(client_for(scene.bob), BASE, body)
    assert response.status_code == status, response.content
    assert not Thread.objects.exists()


def test_who_may_write(scene):
    propose(scene)
    created = post(client_for(scene.bob), BASE, {"path": "code.txt", "line_start": 1, "body": "x"}).json()
    url = f"{BASE}/{created['id']}"
    assert post(Client(), BASE, {"path": "code.txt", "line_start": 1, "body": "x"}).status_code == 401
    assert (
        post(
            client_for(scene.bob, scope="read"), BASE, {"path": "code.txt", "line_start": 1, "body": "x"}
        ).status_code
        == 403
    )
    stranger = client_for(UserFactory(username="stranger"))
    assert stranger.patch(url, {"resolved": True}, content_type="application/json").status_code == 403
    assert Client().get(f"{BASE}/999").status_code == 404
    assert post(stranger, f"{BASE}/999/comments", {"body": "x"}).status_code == 404


def test_a_private_repository_answers_404_to_outsiders(scene):
    propose(scene)
    created = post(client_for(scene.bob), BASE, {"path": "code.txt", "line_start": 1, "body": "x"}).json()
    scene.repo.visibility = Visibility.PRIVATE
    scene.repo.save()
    outsider = client_for(UserFactory(username="outsider"))
    assert outsider.get(BASE).status_code == 404
    assert outsider.get(f"{BASE}/{created['id']}").status_code == 404
    assert post(outsider, BASE, {"path": "code.txt", "line_start": 1, "body": "x"}).status_code == 404
    assert post(outsider, f"{BASE}/{created['id']}/comments", {"body": "x"}).status_code == 404
    assert client_for(scene.bob).get(BASE).status_code == 200  # a member still reads it


def test_edit_and_delete_own_comments(scene):
    propose(scene)
    bob = client_for(scene.bob)
    created = post(bob, BASE, {"path": "code.txt", "line_start": 1, "body": "typo"}).json()
    url = f"{BASE}/{created['id']}/comments/{created['comments'][0]['id']}"
    alice = client_for(scene.alice)
    assert alice.patch(url, {"body": "x"}, content_type="application/json").status_code == 403
    assert alice.delete(url).status_code == 403
    edited = bob.patch(url, {"body": "fixed"}, content_type="application/json")
    assert edited.status_code == 200 and edited.json()["body"] == "fixed"
    assert Client().patch(url, {"body": "x"}, content_type="application/json").status_code == 401
    assert bob.delete(url).status_code == 204
    assert not Thread.objects.exists()
    assert bob.delete(url).status_code == 404
