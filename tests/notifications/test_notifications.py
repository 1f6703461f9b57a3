"""Notifications: the service, the page with mark-as-read, the unread count in the header, the
API, and the merged-ref cleanup wiring (a real push lands alice's work; she is told)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from notifications.models import Notification
from notifications.services import notify
from repos import services as repo_services
from repos.models import Push, Role
from repos.signals import mirror_status_changed
from tests.eager import run_followers
from tests.factories import RepositoryFactory, UserFactory
from workspaces import cleanup
from workspaces.models import ArchivedRef
from workspaces.signals import workspace_ref_archived


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_page_lists_only_own_and_marks_read(alice):
    bob = UserFactory(username="bob")
    mine = notify(alice, kind="test", text="<b>hello</b>", url="/alice")
    notify(bob, kind="test", text="bob's secret")
    client = signed_in(alice)
    page = client.get("/notifications").content.decode()
    assert (
        "&lt;b&gt;hello&lt;/b&gt;" in page and "bob&#x27;s secret" not in page and "bob's secret" not in page
    )
    assert 'aria-label="1 unread"' in page  # the header's count
    # Another user's notification cannot be marked read by alice, and does not exist for her.
    other = Notification.objects.get(user=bob)
    assert client.post(f"/notifications/{other.pk}/read").status_code == 404
    response = client.post(f"/notifications/{mine.pk}/read", {"follow": "1"})
    assert response.status_code == 302 and response["Location"] == "/alice"
    mine.refresh_from_db()
    assert mine.read_at is not None
    assert 'aria-label="1 unread"' not in client.get("/notifications").content.decode()
    other.refresh_from_db()
    assert other.read_at is None


@pytest.mark.django_db
def test_page_needs_sign_in_and_post_needs_csrf(alice):
    assert Client().get("/notifications").status_code == 302
    n = notify(alice, kind="test", text="x")
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/notifications/{n.pk}/read").status_code == 403


@pytest.mark.django_db
def test_offsite_follow_is_not_redirected(alice):
    n = notify(alice, kind="test", text="x", url="https://evil.example/")
    response = signed_in(alice).post(f"/notifications/{n.pk}/read", {"follow": "1"})
    assert response["Location"] == "/notifications"


@pytest.mark.django_db
def test_read_all(alice):
    for i in range(3):
        notify(alice, kind="test", text=f"n{i}")
    signed_in(alice).post("/notifications/read-all")
    assert not Notification.objects.filter(user=alice, read_at__isnull=True).exists()


@pytest.mark.django_db
def test_api_lists_and_marks_read(alice):
    bob = UserFactory(username="bob")
    repo = RepositoryFactory(owner=alice, name="proj")
    first = notify(alice, kind="test", text="one", repository=repo)
    notify(alice, kind="test", text="two")
    theirs = notify(bob, kind="test", text="bob's")
    api = APIClient()
    assert api.get("/api/v1/notifications").status_code in (401, 403)
    api.force_authenticate(alice)
    body = api.get("/api/v1/notifications").json()
    assert [r["text"] for r in body["results"]] == ["two", "one"]
    assert body["results"][1]["repository"] == "alice/proj" and body["results"][1]["unread"] is True
    assert api.post(f"/api/v1/notifications/{theirs.pk}/read").status_code == 404
    response = api.post(f"/api/v1/notifications/{first.pk}/read")
    assert response.status_code == 200 and response.json()["unread"] is False
    assert [r["text"] for r in api.get("/api/v1/notifications?unread=1").json()["results"]] == ["two"]


@pytest.mark.django_db
def test_archived_signal_notifies_owner(alice, monkeypatch, django_capture_on_commit_callbacks):
    run_followers(monkeypatch)
    owner = UserFactory(username="owner")
    repo = RepositoryFactory(owner=owner, name="proj")
    row = ArchivedRef.objects.create(
        repository=repo,
        username="alice",
        ref="refs/users/alice/x",
        sha="a" * 40,
        archive_ref="refs/archive/alice/1",
        branch="main",
        how="merged",
        reason="merged into main in push #1",
        expires_at=timezone.now() + timedelta(30),
    )
    with django_capture_on_commit_callbacks(execute=True):
        workspace_ref_archived.send(
            sender=ArchivedRef,
            repository_id=repo.pk,
            ref=row.ref,
            sha=row.sha,
            push_id=None,
            reason=row.reason,
        )
    n = Notification.objects.get(user=alice)
    assert n.kind == "ref_archived" and n.repository == repo
    assert n.text.startswith("refs/users/alice/x was merged into main and deleted; restore it")
    assert n.url == "/owner/proj/workspaces/alice"


@pytest.mark.django_db
def test_a_failing_mirror_tells_the_active_admins_once(
    alice, monkeypatch, django_capture_on_commit_callbacks
):
    run_followers(monkeypatch)
    owner = UserFactory(username="owner")
    repo = RepositoryFactory(owner=owner, name="proj")
    repo_services.membership_set(repo=repo, user=alice, role=Role.ADMIN)
    gone = UserFactory(username="gone", is_active=False)
    repo_services.membership_set(repo=repo, user=gone, role=Role.ADMIN)
    repo_services.membership_set(repo=repo, user=UserFactory(username="rita"), role=Role.READER)
    with django_capture_on_commit_callbacks(execute=True):
        mirror_status_changed.send_robust(sender=None, repository_id=repo.pk, failing=True, error="timed out")
    told = Notification.objects.order_by("user__username")
    assert [(n.user.username, n.kind) for n in told] == [
        ("alice", "mirror_failing"),
        ("owner", "mirror_failing"),
    ]
    assert told[0].text == "The mirror of owner/proj cannot sync: timed out"
    assert told[0].url == "/owner/proj/settings/mirror"


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_cleanup_after_real_merge_notifies(world, monkeypatch):
    alice = world.add("alice")
    alice.commit("alice one", name="a.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    owner = world.owner
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/feature", check=True)
    owner.git("merge", "--ff-only", "--quiet", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    run_followers(monkeypatch)  # the notice is a task: run here, where cleanup runs
    cleanup.cleanup_after_push(Push.objects.filter(repository=world.repo).order_by("-pk").first())
    # A worker from an earlier test may have run cleanup too: still one archive, one notification.
    notes = list(Notification.objects.filter(user=alice.user, kind="ref_archived"))
    assert len(notes) == 1
    assert notes[0].text.startswith("refs/users/alice/feature was merged into main and deleted")
