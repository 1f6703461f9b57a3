"""json-pushes, compared with the shapes in hg.mozilla.org's pushlog documentation
(version-control-tools, docs/hgmo/pushlog.rst), and the Atom feed. Pushes go through the
live server; the pushlog is read over HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import pytest

from repos.models import Push, PushCommit, RepositoryChange

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

# Documented examples (docs/hgmo/pushlog.rst), used for their shapes.
DOC_V1 = {
    "16": {
        "changesets": [
            "91826025c77c6a8e5711735adaa9766dd4eac7fc",
            "25f2a69ac7ac2919ef35c0b937b862fbb9e7e1f7",
        ],
        "date": 1227196396,
        "user": "gszorc@mozilla.com",
    }
}
DOC_V2 = {"lastpushid": 21, "pushes": DOC_V1}
DOC_FULL_CHANGESET = {
    "author": "Eugen Sawin <esawin@mozilla.com>",
    "branch": "default",
    "desc": "Bug 1110212 - Strong randomness for Android DNS resolver. r=sworkman",
    "files": ["other-licenses/android/res_init.c"],
    "node": "ee4fe2ec168e719e822dabcdd797c0cff9ce2407",
    "tags": [],
}


def get(world, query: str = "", path: str = "json-pushes"):
    url = f"http://{world.host}/{world.repo.full_name}/{path}{'?' + query if query else ''}"
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = resp.read()
            return resp.status, (json.loads(body) if path == "json-pushes" else body), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        body = exc.read()
        is_json = exc.headers.get("Content-Type", "").startswith("application/json")
        return exc.code, (json.loads(body) if is_json else body), dict(exc.headers)


def assert_push_shape(entry, documented):
    # Every documented key is present with the documented type; hostsite adds refs/workspace
    # and the push's generation in the replication log.
    for key, value in documented.items():
        assert isinstance(entry[key], type(value)), key
    assert set(entry) == set(documented) | {"refs", "workspace", "generation"}
    assert isinstance(entry["generation"], int) and entry["generation"] >= 1


@pytest.fixture
def history(world):
    """Three pushes: owner's base (by the fixture), two more commits to main, a workspace push."""
    owner = world.owner
    owner.commit("second")
    third = owner.commit("third", name="docs/readme.txt")
    assert owner.push("main").returncode == 0
    alice = world.add("alice")
    work = alice.commit("alice's change")
    assert alice.push("HEAD:refs/users/alice/change").returncode == 0
    owner.git("tag", "-a", "v1", "-m", "v1", third, check=True)
    assert owner.push("v1").returncode == 0
    pushes = list(Push.objects.filter(repository=world.repo).order_by("pk"))
    assert len(pushes) == 4
    return {"pushes": pushes, "third": third, "work": work, "alice": alice}


def test_version_1_shape_and_default_listing(world, history):
    status, body, headers = get(world)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert list(body) == [str(p.pk) for p in history["pushes"]]
    for entry in body.values():
        assert_push_shape(entry, DOC_V1["16"])
        assert all(len(c) == 40 for c in entry["changesets"])
    first, second, third, fourth = (body[str(p.pk)] for p in history["pushes"])
    assert first["changesets"] == [world.base_sha] and first["user"] == "owner"
    assert second["changesets"][-1] == history["third"] and len(second["changesets"]) == 2
    assert third["user"] == "alice" and third["workspace"] is True
    assert third["refs"] == [
        {"ref": "refs/users/alice/change", "old": "0" * 40, "new": history["work"], "forced": False}
    ]
    assert fourth["changesets"] == []  # a tag points at a commit that was already there
    assert abs(first["date"] - time.time()) < 600


def test_version_2_shape(world, history):
    status, body, _ = get(world, "version=2")
    assert status == 200
    assert set(body) == set(DOC_V2)
    assert body["lastpushid"] == history["pushes"][-1].pk
    for entry in body["pushes"].values():
        assert_push_shape(entry, DOC_V1["16"])


def test_start_and_end_id(world, history):
    ids = [p.pk for p in history["pushes"]]
    _, body, _ = get(world, f"startID={ids[0]}&endID={ids[2]}")
    assert list(body) == [str(ids[1]), str(ids[2])]  # startID exclusive, endID inclusive
    _, body, _ = get(world, f"version=2&startID={ids[2]}")
    assert list(body["pushes"]) == [str(ids[3])]


def test_fromchange_tochange_and_changeset(world, history):
    ids = [p.pk for p in history["pushes"]]
    _, body, _ = get(world, f"fromchange={world.base_sha}&tochange={history['work']}")
    assert list(body) == [str(ids[1]), str(ids[2])]
    _, body, _ = get(world, f"changeset={history['third'][:12]}")
    assert list(body) == [str(ids[1])]
    status, body, _ = get(world, "changeset=" + "f" * 40)
    assert status == 400 and "unknown changeset" in body["error"]["message"]


def test_dates(world, history):
    ids = [p.pk for p in history["pushes"]]
    now = int(time.time())
    _, body, _ = get(world, f"startdate={now - 3600}&enddate={now + 3600}")
    assert list(body) == [str(i) for i in ids]
    _, body, _ = get(world, f"startdate={now + 3600}")
    assert body == {}
    _, body, _ = get(world, "startdate=2000-01-01&enddate=2000-01-02%2010:00:00")
    assert body == {}
    status, body, _ = get(world, "startdate=yesterday-ish")
    assert status == 400 and "startdate" in body["error"]["message"]


def test_user_tipsonly_and_workspace_filter(world, history):
    _, body, _ = get(world, "user=alice")
    assert [e["user"] for e in body.values()] == ["alice"]
    _, body, _ = get(world, "tipsonly=1")
    second = body[str(history["pushes"][1].pk)]
    assert second["changesets"] == [history["third"]]
    _, body, _ = get(world, "workspaces=0")
    assert all(not e["workspace"] for e in body.values()) and len(body) == 3


def test_full_changesets(world, history):
    _, body, _ = get(world, "full=1&version=2")
    second = body["pushes"][str(history["pushes"][1].pk)]
    tip = second["changesets"][-1]
    for key, value in DOC_FULL_CHANGESET.items():
        assert isinstance(tip[key], type(value)), key
    assert set(tip) == set(DOC_FULL_CHANGESET) | {"parents"}
    assert tip["node"] == history["third"]
    assert tip["author"] == "Test Author <author@example.invalid>"
    assert tip["desc"] == "third" and tip["files"] == ["docs/readme.txt"] and tip["branch"] == "main"
    assert tip["tags"] == ["v1"]
    assert tip["parents"] == [second["changesets"][0]["node"]]
    # "the value is ignored": presence is what counts
    _, body, _ = get(world, "full")
    assert isinstance(next(iter(body.values()))["changesets"][0], dict)


@pytest.mark.parametrize(
    "query", ["startID=abc", "endID=-1", "version=3", "fromchange=zzzz", "changeset=%00"]
)
def test_bad_parameters_are_400(world, history, query):
    status, body, _ = get(world, query)
    assert status == 400 and body["error"]["code"] == "invalid"


def test_page_size_is_bounded(world, history, settings):
    from repos import pushlog_query

    assert pushlog_query.PAGE_MAX == 500
    repo_pushes = Push.objects.filter(repository=world.repo)
    first = repo_pushes.first()
    Push.objects.bulk_create([Push(repository=world.repo, pusher_name="bot") for _ in range(600)])
    # The pushlog lists pushes through the replication log: each gets its row, as push_record does.
    after = world.repo.changes.order_by("-generation").first().generation
    RepositoryChange.objects.bulk_create(
        RepositoryChange(repository=world.repo, generation=after + i, kind="push", push=push)
        for i, push in enumerate(repo_pushes.filter(change__isnull=True).order_by("pk"), 1)
    )
    _, body, _ = get(world, f"version=2&startID={first.pk}")
    assert len(body["pushes"]) == 500
    assert body["lastpushid"] == repo_pushes.order_by("-pk").first().pk


def test_private_pushlog_is_404(world, history):
    world.repo.visibility = "private"
    world.repo.save()
    status, _, _ = get(world)
    assert status == 404


def test_each_commit_belongs_to_one_push(world, history):
    shas = list(PushCommit.objects.filter(repository=world.repo).values_list("sha", flat=True))
    assert len(shas) == len(set(shas)) == 4


def test_atom_feed(world, history):
    status, body, headers = get(world, path="pushlog.atom")
    assert status == 200 and headers["Content-Type"].startswith("application/atom+xml")
    ns = {"a": "http://www.w3.org/2005/Atom"}
    entries = ET.fromstring(body).findall("a:entry", ns)  # noqa: S314 - our own feed
    assert len(entries) == 4
    assert "refs/tags/v1" in entries[0].find("a:title", ns).text  # newest first
    assert entries[-1].find("a:author/a:name", ns).text == "owner"
