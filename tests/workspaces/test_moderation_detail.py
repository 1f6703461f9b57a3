"""Moderation detail is staff-only: a repository's admins and the workspace's owner learn that
a workspace was taken down (or purged), with the flags, the reason and the date, never the
names or ids of the refs it held. Tried as the admin did it: the repository's moderation page
in a browser session, the API over HTTP with their token, the workspace's pages, and the
owner's notification and its mail; staff keep every detail."""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from gitcore.git import run_git
from notifications import email
from notifications.models import Notification
from tests.workspaces import moderation_support
from tests.workspaces.moderation_support import signed_in
from workspaces.models import ArchivedRef

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

scene = moderation_support.scene  # the fixture


def get(world, path: str, token: str | None = None) -> tuple[int, str]:
    """(status, body) of a GET on the live server."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://{world.host}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def leaks(text: str, sha: str, refs: tuple[str, ...]) -> list[str]:
    """What `text` names of the moderated work: its id (full, or as the pages shorten it) or a ref."""
    return [s for s in (sha, sha[:7], sha[:10], sha.upper(), *refs) if s in text]


@pytest.fixture
def moderated(scene):
    """alice's workspace with a ref archived by cleanup, and a pull head at her work that the
    repository's admin removed; then staff take the workspace down from the staff page."""
    repo, sha = scene.repo, scene.feature
    run_git(["update-ref", "refs/archive/alice/1", sha], repo=repo.disk_path)
    ArchivedRef.objects.create(
        repository=repo,
        username="alice",
        ref="refs/users/alice/old",
        sha=sha,
        archive_ref="refs/archive/alice/1",
        branch="main",
        how="merged",
        reason="merged",
        expires_at=timezone.now() + timedelta(days=30),
    )
    run_git(["update-ref", "refs/pull/1/head", sha], repo=repo.disk_path)
    removal = urllib.request.Request(
        f"http://{scene.host}/api/v1/repos/{repo.full_name}/refs/pull/1/head",
        method="DELETE",
        headers={"Authorization": f"Bearer {scene.owner.token}"},
    )
    with urllib.request.urlopen(removal, timeout=30) as response:
        assert response.status in (200, 204)
    page = f"/{repo.full_name}/settings/moderation"
    # Before the take-down, the admin reads the id of the ref they removed: it is public work.
    assert sha in signed_in(scene.owner.user).get(page).content.decode()
    response = signed_in(scene.staff).post(
        "/moderation",
        {"repository": repo.full_name, "action": "take_down", "username": "alice", "reason": "DMCA notice 7"},
    )
    assert response.status_code == 302
    scene.page = page
    scene.refs_named = (
        "refs/users/alice/feature",
        "refs/takedown/alice",
        "refs/archive/alice",
        "refs/users/alice/old",
        "refs/pull/1/head",
    )
    return scene


def test_the_admin_s_moderation_page_shows_the_take_down_without_refs_or_ids(moderated):
    sha, refs = moderated.feature, moderated.refs_named
    body = signed_in(moderated.owner.user).get(moderated.page).content.decode()
    assert "take_down" in body and "DMCA notice 7" in body and "&#x27;taken_down&#x27;: True" in body
    assert "staff only" in body
    assert not leaks(body, sha, refs), leaks(body, sha, refs)
    # Staff read the whole entry on the same page, and on their own.
    for page in (moderated.page, "/moderation"):
        staff = signed_in(moderated.staff).get(page).content.decode()
        assert sha in staff and "refs/takedown/alice/feature" in staff and "refs/pull/1/head" in staff


def test_the_moderation_api_is_staff_only_and_gives_staff_the_refs(moderated):
    audit = "/api/v1/moderation/audit"
    for pusher in (moderated.owner, moderated.alice):
        status, body = get(moderated, audit, pusher.token)
        assert status == 403 and not leaks(body, moderated.feature, moderated.refs_named)
    staff = moderated._adopt(moderated.staff, "staff")
    status, body = get(moderated, f"{audit}?action=take_down", staff.token)
    assert status == 200 and moderated.feature in body and "refs/takedown/alice/feature" in body
    assert '"withheld":false' in body.replace(" ", "")


def test_the_workspace_pages_show_the_owner_and_the_admin_the_flags_only(moderated):
    sha, refs = moderated.feature, moderated.refs_named
    base = f"/{moderated.repo.full_name}/workspaces/alice"
    api = f"/api/v1/repos/{moderated.repo.full_name}/workspaces/alice"
    for pusher in (moderated.owner, moderated.alice):
        response = signed_in(pusher.user).get(base)
        body = response.content.decode()
        assert response.status_code == 200 and "taken down" in body, pusher.username
        assert not leaks(body, sha, refs), (pusher.username, leaks(body, sha, refs))
        for path in (api, f"{api}/archived"):
            status, text = get(moderated, path, pusher.token)
            assert status == 200 and not leaks(text, sha, refs), (path, pusher.username, text)
        assert '"taken_down":true' in get(moderated, api, pusher.token)[1].replace(" ", "")
    # Staff see the archived ref the take-down keeps.
    staff = signed_in(moderated.staff).get(base).content.decode()
    assert "refs/users/alice/old" in staff and sha[:10] in staff


def test_the_owner_s_notification_and_mail_name_no_ref_or_id(moderated):
    note = Notification.objects.get(user=moderated.alice.user, kind="workspace_take_down")
    message = email.notification_message(note, "alice@example.org")
    texts = [note.text, note.url, message.subject, message.body, *(c for c, _t in message.alternatives)]
    assert "DMCA notice 7" in note.text
    assert not [t for t in texts if leaks(str(t), moderated.feature, moderated.refs_named)]


def test_a_purge_shows_the_admin_neither_refs_nor_ids(moderated):
    response = signed_in(moderated.staff).post(
        "/moderation",
        {"repository": moderated.repo.full_name, "action": "purge", "username": "alice", "reason": "leak"},
    )
    assert response.status_code == 302
    body = signed_in(moderated.owner.user).get(f"{moderated.page}?action=purge").content.decode()
    assert "purge" in body and "leak" in body and "staff only" in body
    assert not leaks(body, moderated.feature, moderated.refs_named)
    staff = signed_in(moderated.staff).get(f"{moderated.page}?action=purge").content.decode()
    assert moderated.feature in staff and "refs/takedown/alice/feature" in staff
