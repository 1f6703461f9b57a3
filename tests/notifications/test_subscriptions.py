"""Following and muting (the button on proposal and repository pages, and the API), the
notification settings page and API, and report notifications."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from notifications.models import Notification, Preference, Subscription
from repos import services as repo_services
from repos.models import Role, Visibility
from reviews import services
from tests.eager import run_followers
from tests.factories import RepositoryFactory, UserFactory
from tests.reviews.conftest import Scene
from workspaces import moderation

pytestmark = pytest.mark.django_db


def signed_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def proposal_scene(tmp_path, git_home, monkeypatch, django_capture_on_commit_callbacks):
    run_followers(monkeypatch)
    scene = Scene(tmp_path, git_home)
    scene.checkout("feature", "main")
    scene.commit("feature", {"b.txt": "bee\n"})
    scene.publish("feature", "refs/users/alice/feature")
    with django_capture_on_commit_callbacks(execute=True):
        scene.proposal = services.proposal_open(
            repo=scene.repo,
            user=scene.alice,
            source_ref="refs/users/alice/feature",
            target_branch="main",
            title="Add bee",
        )
    return scene


def test_follow_and_mute_a_proposal_from_its_page(proposal_scene):
    scene = proposal_scene
    subject = f"proposal:{scene.proposal.pk}"
    page_url = "/owner/project/proposals/1"
    client = signed_in(scene.bob)
    page = client.get(page_url).content.decode()
    assert 'id="subscription"' in page and 'value="follow"' in page
    response = client.post(
        "/notifications/subscription", {"subject": subject, "action": "follow", "next": page_url}
    )
    assert response.status_code == 302 and response["Location"] == page_url
    assert Subscription.objects.get(user=scene.bob, subject=subject).subscribed
    page = client.get(page_url).content.decode()
    assert 'value="mute"' in page and ">Unfollow<" in page
    client.post(
        "/notifications/subscription", {"subject": subject, "action": "mute", "next": "https://evil.example/"}
    )
    assert Subscription.objects.get(user=scene.bob, subject=subject).subscribed is False
    # The author follows what they opened: their button offers to unfollow.
    assert ">Unfollow<" in signed_in(scene.alice).get(page_url).content.decode()
    assert 'id="subscription"' not in Client().get(page_url).content.decode()


def test_subjects_nobody_may_see_are_404_and_change_nothing(proposal_scene):
    scene = proposal_scene
    outsider = UserFactory(username="outsider")
    private = RepositoryFactory(owner=scene.owner, name="secret", visibility=Visibility.PRIVATE)
    client = signed_in(outsider)
    for subject, action in [
        (f"repository:{private.pk}", "follow"),
        ("repository:999999", "follow"),
        (f"proposal:{scene.proposal.pk}0", "follow"),
        (f"proposal:{scene.proposal.pk}", "subscribe"),
        ("proposal:1 ", "follow"),
        ("user:1", "follow"),
        ("", "follow"),
    ]:
        assert (
            client.post("/notifications/subscription", {"subject": subject, "action": action}).status_code
            == 404
        )
    # A hidden workspace's proposal is not there for a reader.
    with_hidden = signed_in(scene.bob)
    moderation.do_hide_workspace(repo=scene.repo, user=scene.alice, acting_user=scene.owner, reason="spam")
    subject = f"proposal:{scene.proposal.pk}"
    assert (
        with_hidden.post("/notifications/subscription", {"subject": subject, "action": "follow"}).status_code
        == 404
    )
    assert not Subscription.objects.filter(user__in=[outsider, scene.bob]).exists()
    # Signed out: sign in first; no CSRF token: refused.
    assert (
        Client().post("/notifications/subscription", {"subject": subject, "action": "follow"}).status_code
        == 302
    )
    csrf = signed_in(scene.owner, enforce_csrf_checks=True)
    assert (
        csrf.post("/notifications/subscription", {"subject": subject, "action": "follow"}).status_code == 403
    )


def test_watch_a_repository_from_its_page(db):
    owner = UserFactory(username="owner")
    carol = UserFactory(username="carol")
    repo = RepositoryFactory(owner=owner, name="proj")
    client = signed_in(carol)
    assert ">Watch<" in client.get("/owner/proj").content.decode()
    client.post("/notifications/subscription", {"subject": f"repository:{repo.pk}", "action": "follow"})
    assert ">Unwatch<" in client.get("/owner/proj").content.decode()


def test_subscriptions_api(proposal_scene):
    scene = proposal_scene
    api = APIClient()
    assert api.get("/api/v1/notifications/subscriptions").status_code in (401, 403)
    api.force_authenticate(scene.bob)
    subject = f"repository:{scene.repo.pk}"
    response = api.post(
        "/api/v1/notifications/subscriptions", {"subject": subject, "subscribed": True}, format="json"
    )
    assert response.status_code == 200 and response.json() == {"subject": subject, "subscribed": True}
    private = RepositoryFactory(owner=scene.owner, name="secret", visibility=Visibility.PRIVATE)
    missing = api.post(
        "/api/v1/notifications/subscriptions",
        {"subject": f"repository:{private.pk}", "subscribed": True},
        format="json",
    )
    assert missing.status_code == 404
    assert (
        api.post("/api/v1/notifications/subscriptions", {"subject": subject}, format="json").status_code
        == 400
    )
    assert api.get("/api/v1/notifications/subscriptions").json() == [{"subject": subject, "subscribed": True}]


def test_settings_page_sets_and_refuses_bad_values(db):
    bob = UserFactory(username="bob")
    client = signed_in(bob)
    assert Client().get("/settings/notifications").status_code == 302
    page = client.get("/settings/notifications").content.decode()
    assert 'name="review_requested" value="email"' in page and "This site sends no mail" in page
    response = client.post("/settings/notifications", {"comment": "digest", "review_requested": "email"})
    assert response.status_code == 302
    # The default is no row: a later change of the default reaches the user.
    assert list(Preference.objects.filter(user=bob).values_list("kind", "delivery")) == [
        ("comment", "digest")
    ]
    response = client.post("/settings/notifications", {"comment": "web", "merged": "fax"})
    assert response.status_code == 400 and b"Delivery must be one of" in response.content
    assert Preference.objects.get(user=bob, kind="comment").delivery == "digest"


def test_preferences_api(db):
    bob = UserFactory(username="bob")
    api = APIClient()
    api.force_authenticate(bob)
    rows = {r["kind"]: r for r in api.get("/api/v1/notifications/preferences").json()}
    assert rows["proposal_opened"]["delivery"] == rows["proposal_opened"]["default"] == "digest"
    assert {"mention", "merged", "report", "report_outcome", "ref_archived", "mirror_failing"} <= set(rows)
    response = api.patch("/api/v1/notifications/preferences", {"proposal_opened": "email"}, format="json")
    assert response.status_code == 200
    assert {r["kind"]: r["delivery"] for r in response.json()}["proposal_opened"] == "email"
    for bad in ({"nope": "web"}, {"merged": "fax"}, {"merged": 1}, ["merged"]):
        assert api.patch("/api/v1/notifications/preferences", bad, format="json").status_code == 400
    assert list(Preference.objects.filter(user=bob).values_list("kind", "delivery")) == [
        ("proposal_opened", "email")
    ]


def test_reports_tell_the_admins_and_the_outcome_tells_the_reporter(db, django_capture_on_commit_callbacks):
    owner = UserFactory(username="owner")
    admin = UserFactory(username="admin2")
    maint = UserFactory(username="maint")
    target = UserFactory(username="target")
    reporter = UserFactory(username="reporter")
    repo = RepositoryFactory(owner=owner, name="proj")
    repo_services.membership_set(repo=repo, user=admin, role=Role.ADMIN)
    repo_services.membership_set(repo=repo, user=maint, role=Role.MAINTAINER)
    repo_services.membership_set(repo=repo, user=target, role=Role.ADMIN)  # not told of a report on them
    with django_capture_on_commit_callbacks(execute=True):
        report = moderation.report_create(repo=repo, target_user=target, reporter=reporter, reason="<spam>")
    told = {n.user.username: n for n in Notification.objects.select_related("user")}
    assert set(told) == {"owner", "admin2"}
    assert told["owner"].kind == "report" and told["owner"].body == "<spam>"
    assert told["owner"].url == "/owner/proj/settings/moderation"
    Notification.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        moderation.report_close(report=report, acting_user=owner, resolved=False, reason="fine")
    outcome = Notification.objects.get()
    assert outcome.user == reporter and outcome.kind == "report_outcome"
    assert outcome.text == "Your report on target's workspace in owner/proj was dismissed."
