"""Notifications made before a moderation forget the moderated proposal: its title, the quoted
text and the link show as "Content removed" on /notifications, in /api/v1/notifications, on
"Open", and in mail rendered afterwards, to everyone who may not see the proposal now. Those
who still may (staff; for a hidden workspace, its owner and the repository's admins) keep
them. Tried as it happened: proposals opened and commented on over the API of the live server,
told to watchers, maintainers and authors, then moderated."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from django.core import mail

from notifications import mailer
from notifications.models import Notification
from notifications.selectors import REMOVED
from notifications.services import subscription_set
from tests.factories import UserFactory
from tests.workspaces.moderation_support import signed_in
from workspaces import moderation

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

ALICE_TITLE = "alice secret proposal"
HUGO_TITLE = "hugo hidden proposal"


def call(world, path: str, token: str, body: dict | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"http://{world.host}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def propose(world, pusher, ref: str, title: str) -> int:
    pusher.commit(f"{title} work", name=f"{pusher.username}.txt")
    assert pusher.push(f"HEAD:refs/users/{pusher.username}/{ref}").returncode == 0
    status, text = call(
        world,
        f"/api/v1/repos/{world.repo.full_name}/proposals",
        pusher.token,
        {"source_ref": ref, "target_branch": "main", "title": title, "description": f"about {title}"},
    )
    assert status == 201, text
    return json.loads(text)["number"]


@pytest.fixture
def scene(world):
    """bob watches the repository, maud maintains it, sam (staff) watches it; alice and hugo
    each open a proposal, and bob comments on both (so their authors are told too). Then staff
    take alice's workspace down and hide hugo's."""
    world.maud = world.add("maud", "maintainer")
    world.bob = world.add("bob")
    world.alice, world.hugo = world.add("alice"), world.add("hugo")
    world.sam = world._adopt(UserFactory(username="sam", is_staff=True), "sam")
    for pusher in (world.bob, world.sam):
        subscription_set(user=pusher.user, subject=f"repository:{world.repo.pk}", subscribed=True)
    api = f"/api/v1/repos/{world.repo.full_name}/proposals"
    for author, title in ((world.alice, ALICE_TITLE), (world.hugo, HUGO_TITLE)):
        number = propose(world, author, "w", title)
        status, text = call(world, f"{api}/{number}/comments", world.bob.token, {"body": f"re: {title}"})
        assert status == 201, text
    # Everyone concerned was told, with the title, before the moderation.
    told = {
        (n.user.username, n.text.rpartition(": ")[2]) for n in Notification.objects.select_related("user")
    }
    for who in ("owner", "maud", "bob", "sam"):
        assert {(who, ALICE_TITLE), (who, HUGO_TITLE)} <= told, who
    assert {("alice", ALICE_TITLE), ("hugo", HUGO_TITLE)} <= told
    moderation.do_take_down_workspace(
        repo=world.repo, user=world.alice.user, acting_user=world.sam.user, reason="DMCA"
    )
    moderation.do_hide_workspace(
        repo=world.repo, user=world.hugo.user, acting_user=world.sam.user, reason="abuse"
    )
    return world


# Who may still see each proposal (and so keeps its notifications), and who may not.
SEES = {ALICE_TITLE: ("sam",), HUGO_TITLE: ("sam", "owner", "hugo")}
BLIND = {ALICE_TITLE: ("owner", "maud", "bob", "alice"), HUGO_TITLE: ("maud", "bob")}


def test_the_page_and_the_api_show_content_removed_to_who_may_not_see_it(scene):
    for title, blind in BLIND.items():
        for who in blind:
            pusher = scene.users[who]
            page = signed_in(pusher.user).get("/notifications").content.decode()
            status, api = call(scene, "/api/v1/notifications", pusher.token)
            assert status == 200
            for text in (page, api):
                assert title not in text and REMOVED in text, (who, title)
                assert "about " + title not in text and "re: " + title not in text
            # The removed rows link nowhere.
            removed = [r for r in json.loads(api)["results"] if r["text"] == REMOVED]
            assert removed and all(r["url"] == "" for r in removed)
    for title, seeing in SEES.items():
        for who in seeing:
            pusher = scene.users[who]
            assert title in signed_in(pusher.user).get("/notifications").content.decode(), (who, title)
            assert title in call(scene, "/api/v1/notifications", pusher.token)[1], (who, title)


def test_open_does_not_follow_a_removed_link(scene):
    note = Notification.objects.filter(user=scene.bob.user, text__contains=ALICE_TITLE).first()
    response = signed_in(scene.bob.user).post(f"/notifications/{note.pk}/read", {"follow": "1"})
    assert response.status_code == 302 and response["Location"] == "/notifications"
    status, text = call(scene, f"/api/v1/notifications/{note.pk}/read", scene.bob.token, {})
    assert status == 200 and json.loads(text)["text"] == REMOVED and ALICE_TITLE not in text
    # Staff's copy of the same event still opens the proposal.
    staff_note = Notification.objects.filter(user=scene.sam.user, text__contains=ALICE_TITLE).first()
    response = signed_in(scene.sam.user).post(f"/notifications/{staff_note.pk}/read", {"follow": "1"})
    assert response["Location"] == staff_note.url != ""


def test_mail_rendered_after_the_moderation_shows_content_removed(scene, settings):
    settings.EMAIL_ENABLED = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for user in (scene.bob.user, scene.sam.user, scene.alice.user):
        user.email = f"{user.username}@example.org"
        user.save(update_fields=["email"])
    # The digest (new proposals are digest mail by default), sent after the moderation.
    assert mailer.send_digest(scene.bob.user.pk).startswith("sent")
    assert mailer.send_digest(scene.sam.user.pk).startswith("sent")
    bob, sam = mail.outbox
    bob_text = " ".join([bob.subject, bob.body, *(c for c, _t in bob.alternatives)])
    assert ALICE_TITLE not in bob_text and HUGO_TITLE not in bob_text and REMOVED in bob_text
    assert "/proposals/" not in bob_text
    sam_text = " ".join([sam.body, *(c for c, _t in sam.alternatives)])
    assert ALICE_TITLE in sam_text and HUGO_TITLE in sam_text
    # A mail queued before the take-down and sent after it: the subject line and body too.
    mail.outbox.clear()
    note = Notification.objects.get(user=scene.alice.user, kind="comment")
    assert mailer.send_notification(note.pk) == "sent"
    (message,) = mail.outbox
    text = " ".join([message.subject, message.body, *(c for c, _t in message.alternatives)])
    assert message.subject == f"[{scene.repo.full_name}] {REMOVED}"
    assert ALICE_TITLE not in text and "/proposals/" not in text
