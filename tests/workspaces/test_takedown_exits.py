"""A take-down (or hide) takes content down at every exit, tried the way an attacker on a live
instance tried it: real pushes to the live server, the moderation service, then requests as
anonymous (over HTTP), an outsider and a maintainer, with ids in lower and upper case, full
and abbreviated."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.error
import urllib.request

import pytest
from django.test import Client

from repos import webhooks
from repos.models import Push, Webhook
from repos.visibility import TAKEN_DOWN_MESSAGE
from tests.factories import UserFactory
from workspaces import moderation
from workspaces.models import WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

UNKNOWN = "d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0d"


def call(world, path: str, *, token: str | None = None, method: str = "GET", body: dict | None = None):
    """(status, text) of a request to the live server."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(f"http://{world.host}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def ids(sha: str) -> list[str]:
    return [sha, sha.upper(), sha[:7], sha[:7].upper(), sha[:12]]


@pytest.fixture
def scene(world):
    """alice pushed secret work and proposed it (then taken down); hugo pushed work (then
    hidden); maud maintains; bob is an outsider; sam is staff."""
    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    alice = world.add("alice")
    world.secret = alice.commit("alice secret message", name="alice-secret-file.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    status, text = call(
        world,
        f"/api/v1/repos/{world.repo.full_name}/proposals",
        token=alice.token,
        method="POST",
        body={"source_ref": "feature", "target_branch": "main", "title": "alice secret proposal"},
    )
    assert status == 201, text
    world.proposal = json.loads(text)["number"]
    hugo = world.add("hugo")
    world.hidden = hugo.commit("hugo hidden message", name="hugo-file.txt")
    assert hugo.push("HEAD:refs/users/hugo/wip").returncode == 0
    world.alice, world.hugo = alice, hugo
    world.maud = world.add("maud", "maintainer")
    world.bob = world.add("bob")
    world.sam = UserFactory(username="sam", is_staff=True)
    moderation.do_take_down_workspace(repo=world.repo, user=alice.user, acting_user=world.sam, reason="DMCA")
    moderation.do_hide_workspace(repo=world.repo, user=hugo.user, acting_user=world.sam, reason="abuse")
    world.base = f"/{world.repo.full_name}"
    return world


def test_proposal_pages_and_api_answer_as_missing(scene):
    base, n = scene.base, scene.proposal
    pages = [f"{base}/proposals/{n}", f"{base}/proposals/{n}/revisions/1"]
    missing = [f"{base}/proposals/999", f"{base}/proposals/999/revisions/1"]
    for page, absent in zip(pages, missing, strict=True):
        assert call(scene, page)[0] == call(scene, absent)[0] == 404
        for user in (scene.bob.user, scene.maud.user, scene.owner.user):
            assert signed_in(user).get(page).status_code == 404, (page, user)
        assert signed_in(scene.sam).get(page).status_code == 200
    api = f"/api/v1/repos/{scene.repo.full_name}/proposals"
    for pusher in (None, scene.bob, scene.maud):
        token = pusher.token if pusher else None
        assert call(scene, f"{api}/{n}", token=token) == call(scene, f"{api}/999", token=token)
        assert call(scene, f"{api}/{n}/revisions", token=token)[0] == 404
        listed = call(scene, f"{api}?state=all", token=token)[1]
        assert "alice secret proposal" not in listed and scene.secret not in listed
        page = (
            (signed_in(pusher.user) if pusher else Client())
            .get(f"{base}/proposals?state=all")
            .content.decode()
        )
        assert "alice secret proposal" not in page
    assert "alice secret proposal" in signed_in(scene.sam).get(f"{base}/proposals?state=all").content.decode()


def test_the_maintainer_cannot_merge_taken_down_work(scene):
    main = scene.refs()["refs/heads/main"]
    api = f"/api/v1/repos/{scene.repo.full_name}/proposals/{scene.proposal}/merge"
    assert call(scene, api, token=scene.maud.token, method="POST", body={"strategy": "merge"})[0] == 404
    assert (
        signed_in(scene.maud.user)
        .post(f"{scene.base}/proposals/{scene.proposal}/merge", {"strategy": "merge"})
        .status_code
        == 404
    )
    assert scene.refs()["refs/heads/main"] == main


def test_a_proposal_left_on_taken_down_work_cannot_be_merged(scene, world):
    """carol built on work that was taken down later, then deleted her ref: her proposal's
    head is no ref's any more, and the work under it is reachable from the take-down only."""
    moderation.do_lift_take_down(
        repo=world.repo, user=scene.alice.user, acting_user=scene.sam, reason="appeal"
    )
    carol = world.add("carol")
    carol.git("fetch", "--quiet", carol.remote, "refs/users/alice/feature", check=True)
    carol.git("checkout", "--quiet", "FETCH_HEAD", check=True)
    carol.commit("carol on top of alice", name="carol.txt")
    assert carol.push("HEAD:refs/users/carol/fix").returncode == 0
    status, text = call(
        world,
        f"/api/v1/repos/{world.repo.full_name}/proposals",
        token=carol.token,
        method="POST",
        body={"source_ref": "fix", "target_branch": "main", "title": "carol's fix"},
    )
    assert status == 201, text
    number = json.loads(text)["number"]
    moderation.do_take_down_workspace(
        repo=world.repo, user=scene.alice.user, acting_user=scene.sam, reason="again"
    )
    assert carol.push(":refs/users/carol/fix").returncode == 0
    main = scene.refs()["refs/heads/main"]
    api = f"/api/v1/repos/{world.repo.full_name}/proposals/{number}/merge"
    status, text = call(world, api, token=scene.maud.token, method="POST", body={"strategy": "squash"})
    assert status == 403 and TAKEN_DOWN_MESSAGE in text.lower(), text
    page = signed_in(scene.maud.user).post(f"{scene.base}/proposals/{number}/merge", {"strategy": "merge"})
    assert page.status_code == 403 and TAKEN_DOWN_MESSAGE in page.content.decode().lower()
    assert scene.refs()["refs/heads/main"] == main
    # Its page would show the work in its diff: missing, for those who may not see it.
    assert signed_in(scene.maud.user).get(f"{scene.base}/proposals/{number}").status_code == 404


def test_the_pushlog_leaves_out_taken_down_and_hidden_pushes(scene):
    leaks = (
        scene.secret,
        "alice secret message",
        "alice-secret-file.txt",
        "refs/users/alice/",
        "refs/takedown/",
        scene.hidden,
        "hugo hidden message",
        "hugo-file.txt",
        "refs/users/hugo/",
    )
    for pusher in (None, scene.bob, scene.maud):
        token = pusher.token if pusher else None
        for path in (
            f"{scene.base}/json-pushes?full=1",
            f"{scene.base}/json-pushes?full=1&version=2",
            f"{scene.base}/pushlog.atom",
            f"/api/v1/repos/{scene.repo.full_name}/pushes",
        ):
            status, text = call(scene, path, token=token)
            assert status == 200 and not [leak for leak in leaks if leak in text], (
                path,
                pusher and pusher.username,
            )
        for form in ids(scene.secret):
            assert call(scene, f"{scene.base}/json-pushes?changeset={form}")[1].replace(
                form.lower(), "<id>"
            ) == call(scene, f"{scene.base}/json-pushes?changeset={UNKNOWN[: len(form)]}")[1].replace(
                UNKNOWN[: len(form)], "<id>"
            )
    alice_push = Push.objects.filter(repository=scene.repo, pusher_name="alice").first()
    api = f"/api/v1/repos/{scene.repo.full_name}/pushes"
    assert call(scene, f"{api}/{alice_push.pk}") == call(scene, f"{api}/999999")
    # The main branch's push is still there, and staff see everything.
    assert scene.base_sha in call(scene, f"{scene.base}/json-pushes")[1]
    staff = signed_in(scene.sam).get(f"{scene.base}/json-pushes?full=1").content.decode()
    assert scene.secret in staff and scene.hidden in staff


def test_c_compare_and_commit_pages_are_no_oracle(scene):
    for sha in (scene.secret, scene.hidden):
        for form in ids(sha):
            unknown = UNKNOWN[: len(form)]
            for path in (
                "c/{}",
                "commit/{}",
                "compare/{}...main",
                "compare/main...{}",
                "compare/{}",
                "tree/{}",
                "archive/{}.tar.gz",
                "commits/{}",
            ):
                got = call(scene, f"{scene.base}/{path.format(form)}")
                expected = call(scene, f"{scene.base}/{path.format(unknown)}")
                assert got[0] == expected[0] == 404, (path, form, got[0])
                assert got[1].replace(form, "<id>") == expected[1].replace(unknown, "<id>")
                for user in (scene.bob.user, scene.maud.user):
                    assert signed_in(user).get(f"{scene.base}/{path.format(form)}").status_code == 404
        staff = signed_in(scene.sam)
        assert staff.get(f"{scene.base}/c/{sha[:7].upper()}").status_code == 302
        assert staff.get(f"{scene.base}/compare/{sha.upper()}...main").status_code == 200
    # The hidden workspace's owner and the repository's admins see it; nobody but staff the take-down.
    for user in (scene.hugo.user, scene.owner.user):
        assert signed_in(user).get(f"{scene.base}/commit/{scene.hidden[:7]}").status_code == 200
    for user in (scene.alice.user, scene.owner.user):
        assert signed_in(user).get(f"{scene.base}/commit/{scene.secret[:7]}").status_code == 404


def test_the_work_graph_leaves_out_hidden_heads(scene):
    for pusher in (None, scene.bob, scene.maud):
        token = pusher.token if pusher else None
        for path in (
            f"{scene.base}/work.txt?older=1",
            f"{scene.base}/work?older=1",
            f"/api/v1/repos/{scene.repo.full_name}/work?older=1",
        ):
            status, text = call(scene, path, token=token)
            assert status == 200 and "hugo" not in text and scene.hidden[:7] not in text, path
        assert call(scene, f"{scene.base}/work/stack/hugo/wip", token=token)[0] == 404
        assert call(scene, f"{scene.base}/work/stack/nobody/wip", token=token)[0] == 404
    assert (
        "hugo hidden message"
        in signed_in(scene.hugo.user).get(f"{scene.base}/work.txt?older=1").content.decode()
    )
    assert signed_in(scene.owner.user).get(f"{scene.base}/work/stack/hugo/wip").status_code == 200


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list[bytes] = []

    def do_POST(self):
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_webhooks_carry_nothing_taken_down_or_hidden(scene, world, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    server = http.server.HTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        Webhook.objects.create(
            repository=world.repo, url=f"http://127.0.0.1:{server.server_port}/", secret="s"
        )
        # A push by the hidden workspace's owner: no delivery at all.
        world.hidden_again = scene.hugo.commit("hugo again", name="hugo-file.txt")
        assert scene.hugo.push("HEAD:refs/users/hugo/wip").returncode == 0
        push = Push.objects.filter(repository=world.repo, pusher_name="hugo").order_by("-pk").first()
        assert webhooks.deliveries_for_push(push.pk) == []
        # A push that was visible when its delivery was queued, taken down before it was sent.
        bob = scene.bob
        bob_sha = bob.commit("bob's work", name="bob.txt")
        assert bob.push("HEAD:refs/users/bob/w").returncode == 0
        push = Push.objects.filter(repository=world.repo, pusher_name="bob").order_by("-pk").first()
        [delivery_id] = webhooks.deliveries_for_push(push.pk)
        moderation.do_take_down_workspace(
            repo=world.repo, user=bob.user, acting_user=scene.sam, reason="DMCA"
        )
        from repos.models import WebhookDelivery

        delivery = webhooks.attempt(WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id))
        assert delivery.status == "failed" and delivery.error == webhooks.WITHHELD
        assert not [body for body in _Receiver.bodies if bob_sha.encode() in body]
        # main's pushes still go out.
        owner = world.owner
        owner.git("pull", "--quiet", owner.remote, "main", check=False)
        owner.commit("more on main")
        assert owner.push("main").returncode == 0
        push = Push.objects.filter(repository=world.repo, pusher_name="owner").order_by("-pk").first()
        [delivery_id] = webhooks.deliveries_for_push(push.pk)
        webhooks.attempt(WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id))
        assert _Receiver.bodies and b"refs/heads/main" in _Receiver.bodies[-1]
    finally:
        server.shutdown()
