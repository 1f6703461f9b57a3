"""Every staff or admin action on a repository leaves one audit row, written with the change:
transfer, rename, delete, restore (pages and API), member and visibility changes (pages and
API). The operator's own calls (no actor) and no-op changes write none."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import lifecycle, services
from repos.audit import Action, record_audit
from repos.errors import Forbidden
from repos.models import AuditEntry, Role, Visibility
from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return {
        "owner": UserFactory(username="owner"),
        "member": UserFactory(username="member"),
        "staff": UserFactory(username="staffer", is_staff=True),
    }


@pytest.fixture
def repo(people):
    return RepositoryFactory(owner=people["owner"], name="proj")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope='write')[1]}")
    return client


def rows() -> list[tuple]:
    return [
        (
            e.actor.username if e.actor else None,
            e.action,
            e.target_user.username if e.target_user else None,
            e.detail,
        )
        for e in AuditEntry.objects.order_by("pk").select_related("actor", "target_user")
    ]


def test_rename_on_the_page_and_transfer_by_staff_through_the_api(people, repo):
    client = signed_in(people["owner"])
    assert client.post("/owner/proj/settings/rename", {"name": "renamed"}).status_code == 302
    transfer = api(people["staff"]).post(
        "/api/v1/repos/owner/renamed/transfer", {"owner": "member"}, format="json"
    )
    assert transfer.status_code == 200
    assert rows() == [
        (
            "owner",
            Action.RENAME,
            "owner",
            {"repository": "owner/renamed", "from": "owner/proj", "to": "owner/renamed"},
        ),
        (
            "staffer",
            Action.TRANSFER,
            "owner",
            {"repository": "member/renamed", "from": "owner/renamed", "to": "member/renamed"},
        ),
    ]


def test_a_refused_move_writes_nothing(people, repo):
    with pytest.raises(Forbidden):
        lifecycle.repository_move(repo=repo, acting_user=people["owner"], new_owner=people["member"])
    assert rows() == []


def test_delete_and_restore_through_the_api(people, repo):
    assert api(people["owner"]).delete("/api/v1/repos/owner/proj").status_code == 204
    assert api(people["staff"]).post("/api/v1/repos/owner/proj/restore").status_code == 200
    assert [(actor, action, target) for actor, action, target, _ in rows()] == [
        ("owner", Action.DELETE, "owner"),
        ("staffer", Action.RESTORE, "owner"),
    ]
    # Deleting twice, restoring what is not deleted: nothing happened, nothing is logged.
    repo.refresh_from_db()
    lifecycle.repository_restore(repo=repo, acting_user=people["staff"])
    assert len(rows()) == 2


def test_member_changes_through_pages_and_api(people, repo):
    client = signed_in(people["owner"])
    client.post("/owner/proj/settings/members", {"username": "member", "role": "reader"})
    client.post("/owner/proj/settings/members", {"username": "member", "role": "reader"})  # no change
    assert (
        api(people["owner"])
        .put("/api/v1/repos/owner/proj/members/member", {"role": "maintainer"}, format="json")
        .status_code
        == 200
    )
    client.post("/owner/proj/settings/members/member/remove")
    assert [
        (action, target, detail.get("from"), detail.get("to")) for _, action, target, detail in rows()
    ] == [
        (Action.MEMBER_SET, "member", None, "reader"),
        (Action.MEMBER_SET, "member", "reader", "maintainer"),
        (Action.MEMBER_REMOVE, "member", "maintainer", None),
    ]


def test_visibility_change_is_audited_other_settings_are_not(people, repo):
    client = signed_in(people["owner"])
    form = {"description": "new words", "visibility": Visibility.PUBLIC, "default_branch": "main"}
    assert client.post("/owner/proj/settings", form).status_code == 302
    assert rows() == []
    assert (
        api(people["owner"])
        .patch("/api/v1/repos/owner/proj", {"visibility": "private"}, format="json")
        .status_code
        == 200
    )
    assert rows() == [
        ("owner", Action.VISIBILITY, None, {"repository": "owner/proj", "from": "public", "to": "private"})
    ]


def test_the_operator_leaves_no_row(people, repo):
    services.membership_set(repo=repo, user=people["member"], role=Role.ADMIN)
    services.repository_update(repo=repo, visibility=Visibility.PRIVATE)
    assert rows() == []


def test_rows_outlive_the_repository_and_show_on_the_staff_log(people, repo):
    record_audit(actor=people["staff"], action=Action.REF_REMOVE, repository=repo, reason="leaked key")
    repo.delete()
    entry = AuditEntry.objects.get()
    assert entry.repository is None and entry.detail == {"repository": "owner/proj"}
    page = signed_in(people["staff"]).get("/moderation?action=ref_remove")
    assert page.status_code == 200 and "leaked key" in page.content.decode()
