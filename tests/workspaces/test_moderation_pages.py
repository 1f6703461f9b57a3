"""Moderation pages and the staff-only API: reports queue, actions with reasons, the audit
log and its filters, who may see what, CSRF and escaping."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from notifications.models import Notification
from repos import services as repo_services
from repos.models import AuditEntry, Role
from tests.factories import RepositoryFactory, UserFactory
from workspaces.models import Report, Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def site():
    class Site:
        pass

    s = Site()
    s.owner = UserFactory(username="owner")
    s.repo = RepositoryFactory(owner=s.owner, name="project")
    s.other = RepositoryFactory(owner=UserFactory(username="carol"), name="elsewhere")
    s.alice = UserFactory(username="alice")
    s.bob = UserFactory(username="bob")
    s.staff = UserFactory(username="staff", is_staff=True)
    s.maud = UserFactory(username="maud")
    repo_services.membership_set(repo=s.repo, user=s.maud, role=Role.MAINTAINER)
    return s


def signed_in(user, csrf=False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def test_report_goes_to_the_queues(site):
    url = "/owner/project/report-workspace/alice"
    assert Client().get(url).status_code == 302  # sign in first
    bob = signed_in(site.bob)
    assert bob.post(url, {"reason": "<script>alert(1)</script> spam"}).status_code == 302
    report = Report.objects.get()
    assert (report.reporter, report.target_user, report.repository, report.state) == (
        site.bob,
        site.alice,
        site.repo,
        "open",
    )
    for user, page in (
        (site.staff, "/moderation"),
        (site.owner, "/owner/project/settings/moderation"),
        (site.staff, "/owner/project/settings/moderation"),
    ):
        body = signed_in(user).get(page).content.decode()
        assert "&lt;script&gt;alert(1)&lt;/script&gt; spam" in body and "<script>alert(1)" not in body
    # Not for others: the staff page and a repository's page are 404 to non-moderators.
    assert signed_in(site.bob).get("/moderation").status_code == 404
    assert signed_in(site.maud).get("/owner/project/settings/moderation").status_code == 404
    assert signed_in(site.owner).get("/carol/elsewhere/settings/moderation").status_code == 404
    assert signed_in(site.owner).get("/moderation").status_code == 404


def test_report_needs_a_reason_and_csrf(site):
    url = "/owner/project/report-workspace/alice"
    assert signed_in(site.bob).post(url, {"reason": ""}).status_code == 200
    assert signed_in(site.bob, csrf=True).post(url, {"reason": "x"}).status_code == 403
    assert not Report.objects.exists()


def test_admin_page_actions_and_report_resolution(site, django_capture_on_commit_callbacks):
    Report.objects.create(repository=site.repo, target_user=site.alice, reporter=site.bob, reason="spam")
    report = Report.objects.get()
    page = "/owner/project/settings/moderation"
    owner = signed_in(site.owner)
    with django_capture_on_commit_callbacks(execute=True):
        owner.post(page, {"action": "freeze", "username": "alice", "reason": "spam", "report": report.pk})
    assert Workspace.objects.get(repository=site.repo, user=site.alice).flags == {
        "frozen": True,
        "hidden": False,
        "taken_down": False,
    }
    report.refresh_from_db()
    assert report.state == "resolved" and report.closed_by == site.owner
    # Staff-only actions are refused to the repository's admin, with nothing changed.
    owner.post(page, {"action": "take_down", "username": "alice", "reason": "x"})
    assert Workspace.objects.get(repository=site.repo, user=site.alice).flags == {
        "frozen": True,
        "hidden": False,
        "taken_down": False,
    }
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["freeze"]
    # Dismissing a report leaves an audit row too.
    second = Report.objects.create(
        repository=site.repo, target_user=site.alice, reporter=site.bob, reason="meh"
    )
    owner.post(page, {"dismiss": second.pk, "reason": "not a problem"})
    second.refresh_from_db()
    assert second.state == "dismissed"
    assert AuditEntry.objects.filter(action="dismiss_report").count() == 1
    assert Notification.objects.filter(user=site.alice, kind="workspace_freeze").exists()


def test_staff_page_acts_anywhere_and_filters_the_log(site):
    staff = signed_in(site.staff)
    staff.post(
        "/moderation",
        {"repository": "carol/elsewhere", "action": "hide", "username": "alice", "reason": "reason-one"},
    )
    staff.post(
        "/moderation",
        {"repository": "owner/project", "action": "freeze", "username": "bob", "reason": "reason-two"},
    )
    staff.post("/moderation", {"action": "site_ban", "username": "bob", "reason": "reason-three"})
    site.bob.refresh_from_db()
    assert not site.bob.is_active
    assert Workspace.objects.get(repository=site.other, user=site.alice).flags == {
        "frozen": False,
        "hidden": True,
        "taken_down": False,
    }
    body = staff.get("/moderation?repository=carol/elsewhere").content.decode()
    assert "reason-one" in body and "reason-two" not in body
    body = staff.get("/moderation?user=bob&action=site_ban").content.decode()
    assert "reason-three" in body and "reason-two" not in body and "reason-one" not in body


def test_api_is_staff_only(site):
    api = APIClient()
    for user in (None, site.owner, site.maud):
        if user:
            api.force_authenticate(user)
        assert api.get("/api/v1/moderation/reports").status_code in (401, 403)
        assert api.post(
            "/api/v1/moderation/actions",
            {"action": "freeze", "username": "alice", "repository": "owner/project", "reason": "x"},
            format="json",
        ).status_code in (401, 403)
        assert api.get("/api/v1/moderation/audit").status_code in (401, 403)
    assert not AuditEntry.objects.exists()


def test_api_reports_actions_and_audit(site):
    report = Report.objects.create(
        repository=site.repo, target_user=site.alice, reporter=site.bob, reason="spam"
    )
    api = APIClient()
    api.force_authenticate(site.staff)
    listed = api.get("/api/v1/moderation/reports").json()["results"]
    assert [(r["id"], r["user"], r["repository"]) for r in listed] == [(report.pk, "alice", "owner/project")]
    response = api.post(
        "/api/v1/moderation/actions",
        {
            "action": "take_down",
            "username": "alice",
            "repository": "owner/project",
            "reason": "DMCA",
            "report": report.pk,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["action"] == "take_down" and response.json()["after"] == {
        "frozen": False,
        "hidden": False,
        "taken_down": True,
        "refs": {},
    }
    assert api.get("/api/v1/moderation/reports").json()["results"] == []
    again = api.post(
        "/api/v1/moderation/actions",
        {"action": "take_down", "username": "alice", "repository": "owner/project", "reason": "DMCA"},
        format="json",
    )
    assert again.status_code == 409
    assert (
        api.post(
            "/api/v1/moderation/actions",
            {"action": "freeze", "username": "alice", "repository": "owner/project", "reason": ""},
            format="json",
        ).status_code
        == 400
    )
    other = Report.objects.create(repository=site.repo, target_user=site.alice, reporter=site.bob, reason="x")
    assert (
        api.post(f"/api/v1/moderation/reports/{other.pk}/dismiss", {"reason": "dup"}, format="json").json()[
            "state"
        ]
        == "dismissed"
    )
    log = api.get("/api/v1/moderation/audit?action=take_down").json()["results"]
    assert [(e["action"], e["actor"], e["user"], e["repository"]) for e in log] == [
        ("take_down", "staff", "alice", "owner/project")
    ]
    assert len(api.get("/api/v1/moderation/audit?user=alice").json()["results"]) == 2
