"""The object-checks settings page and API: who sees them, who changes a check, and what the
repository page tells admins about the legacy objects its history carries."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos import objectcheck
from repos.models import LegacyObject, ObjectCheckOverride
from tests.factories import RepositoryFactory, UserFactory

OID = "a" * 40


def signed_in(user):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def bearer(user, scope="write"):
    from repos import services

    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.token_create(user=user, scope=scope)[1]}")
    return client


@pytest.fixture
def people(db):
    from repos import services
    from repos.models import Role, Visibility

    owner = UserFactory(username="olga")
    public = RepositoryFactory(owner=owner, name="pub")
    private = RepositoryFactory(owner=owner, name="priv", visibility=Visibility.PRIVATE)
    admin, reader = UserFactory(username="adam"), UserFactory(username="rita")
    for repo in (public, private):
        services.membership_set(repo=repo, user=admin, role=Role.ADMIN)
        services.membership_set(repo=repo, user=reader, role=Role.MAINTAINER)
    return {
        "owner": owner,
        "admin": admin,
        "maintainer": reader,
        "outsider": UserFactory(username="otto"),
        "staff": UserFactory(username="stella", is_staff=True),
        "public": public,
        "private": private,
    }


PAGE = "/olga/{}/settings/object-checks"
API = "/api/v1/repos/olga/{}/object-checks"


@pytest.mark.parametrize("repo", ["pub", "priv"])
def test_only_admins_and_staff_see_the_page_and_the_api(people, repo):
    for who in ("owner", "admin", "staff"):
        assert signed_in(people[who]).get(PAGE.format(repo)).status_code == 200, who
        assert bearer(people[who]).get(API.format(repo)).status_code == 200, who
    for who in ("maintainer", "outsider", None):
        user = people[who] if who else None
        assert signed_in(user).get(PAGE.format(repo)).status_code == 404, who
        assert (
            signed_in(user)
            .post(PAGE.format(repo), {"msg_id": "hasDot", "severity": "warn", "reason": "x"})
            .status_code
            == 404
        ), who
        api = bearer(user)
        assert api.get(API.format(repo)).status_code == 404, who
        response = api.post(
            API.format(repo), {"msg_id": "hasDot", "severity": "warn", "reason": "x"}, format="json"
        )
        if who is None:  # an anonymous write is 401 before any lookup, whether or not the repo exists
            assert response.status_code == 401, who
        else:
            assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", who
    assert not ObjectCheckOverride.objects.exists()


def test_staff_change_a_check_on_the_page_and_admins_read_it(people):
    repo = people["public"]
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="zeroPaddedFilemode", source="import")
    staff_page = signed_in(people["staff"])
    fields = {"msg_id": "hasDotgit", "severity": "warn", "reason": "<script>alert(1)</script> old tree"}
    response = staff_page.post(PAGE.format("pub"), fields, follow=True)
    assert response.status_code == 200 and "hasDotgit is now warn for olga/pub." in response.content.decode()
    row = ObjectCheckOverride.objects.get()
    assert (row.repository, row.msg_id, row.severity) == (repo, "hasDotgit", "warn")
    assert row.actor == people["staff"]
    page = signed_in(people["owner"]).get(PAGE.format("pub")).content.decode()
    assert "This history contains 1 object in legacy formats: zeroPaddedFilemode (1)." in page and OID in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; old tree" in page and "<script>alert(1)" not in page
    assert "Only the site's staff can change" in page and 'name="reason"' not in page
    assert "(overridden; default error)" in page
    assert 'name="reason"' in staff_page.get(PAGE.format("pub")).content.decode()
    # an admin who is not staff cannot, hostile input changes nothing
    owner_page = signed_in(people["owner"])
    for fields in ({"msg_id": "hasDot", "severity": "ignore", "reason": "mine"},):
        response = owner_page.post(PAGE.format("pub"), fields, follow=True)
        assert "Only site staff may change" in response.content.decode()
    for fields in (
        {"msg_id": "x" * 10000, "severity": "warn", "reason": "r"},
        {"msg_id": "hasDot", "severity": "off", "reason": "r"},
        {"msg_id": "hasDot"},
        {"msg_id": "nulInHeader", "severity": "warn", "reason": "r"},
    ):
        assert staff_page.post(PAGE.format("pub"), fields).status_code == 302
    assert ObjectCheckOverride.objects.count() == 1


def test_the_api_reads_for_admins_and_writes_for_staff(people):
    repo = people["private"]
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="badTimezone", source="push")
    LegacyObject.objects.create(repository=repo, oid=OID, msg_id="badEmail", source="push")
    body = bearer(people["admin"]).get(API.format("priv")).json()
    assert {row["msg_id"] for row in body["checks"]} == {c.msg_id for c in objectcheck.known_checks()}
    assert body["legacy"]["total"] == 1
    assert body["legacy"]["text"].startswith("This history contains 1 object")
    assert body["legacy"]["by_check"] == [
        {"msg_id": "badEmail", "count": 1, "examples": [OID]},
        {"msg_id": "badTimezone", "count": 1, "examples": [OID]},
    ]
    assert body["overrides"] == []
    payload = {"msg_id": "badTimezone", "severity": "error", "reason": "we fixed our importer"}
    for who in ("owner", "admin"):
        response = bearer(people[who]).post(API.format("priv"), payload, format="json")
        assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied", who
    read_only = bearer(people["staff"], scope="read")
    assert read_only.post(API.format("priv"), payload, format="json").status_code == 403
    for bad in (
        {**payload, "severity": "lenient"},
        {**payload, "msg_id": "noSuchCheck"},
        {"msg_id": "badTimezone"},
        {**payload, "reason": "r" * 2001},
        {**payload, "msg_id": ["a"]},
        {**payload, "msg_id": "nulInHeader", "severity": "ignore"},
    ):
        response = bearer(people["staff"]).post(API.format("priv"), bad, format="json")
        assert response.status_code == 400 and response.json()["error"]["code"] == "invalid", bad
    assert not ObjectCheckOverride.objects.exists()
    response = bearer(people["staff"]).post(API.format("priv"), payload, format="json")
    assert response.status_code == 201 and response.json()["actor"] == "stella"
    body = bearer(people["owner"]).get(API.format("priv")).json()
    assert next(c for c in body["checks"] if c["msg_id"] == "badTimezone")["severity"] == "error"
    assert [(o["msg_id"], o["severity"], o["actor"]) for o in body["overrides"]] == [
        ("badTimezone", "error", "stella")
    ]


def test_the_repository_page_tells_admins_what_the_history_carries(people):
    LegacyObject.objects.create(
        repository=people["public"], oid=OID, msg_id="missingTaggerEntry", source="import"
    )
    line = "This history contains 1 object in legacy formats: missingTaggerEntry (1)."
    page = signed_in(people["admin"]).get("/olga/pub").content.decode()
    assert line in page and PAGE.format("pub") in page
    for who in ("maintainer", "outsider"):
        assert line not in signed_in(people[who]).get("/olga/pub").content.decode()
    assert line not in signed_in(None).get("/olga/pub").content.decode()
