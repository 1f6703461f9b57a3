"""The pushlog as a view over the replication log: every exit (json-pushes, the Pushlog page,
the Atom feed, the webhook payload) lists pushes through their log row and shows its
generation, with no query per push; a push with no row is not listed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from repos.models import Push, RefUpdate, RepositoryChange
from repos.webhooks import payload_for
from tests.repos.test_pushlog_page import Scene

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(tmp_path, git_home):
    scene = Scene(tmp_path, git_home)
    scene.pushes = [scene.imported] + [
        scene.push(scene.olga, "refs/heads/main", f"olga {i}", day=i) for i in range(3)
    ]
    return scene


def generation_of(push: Push) -> int:
    return RepositoryChange.objects.get(push=push).generation


def json_pushes(query: str = "") -> dict:
    response = Client().get(f"/olga/proj/json-pushes?{query}")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_every_exit_shows_the_generation(scene):
    expected = {push.pk: generation_of(push) for push in scene.pushes}
    # create (1), the import (2), then one per push: consecutive in push order.
    assert list(expected.values()) == [2, 3, 4, 5]

    body = json_pushes("version=2&full=1")
    assert {int(pk): entry["generation"] for pk, entry in body["pushes"].items()} == expected
    assert body["lastpushid"] == scene.pushes[-1].pk
    v1 = json_pushes()
    assert {int(pk): entry["generation"] for pk, entry in v1.items()} == expected

    html = Client().get("/olga/proj/pushlog").content.decode()
    shown = dict(re.findall(r'id="push-(\d+)".*?generation (\d+)</span>', html, flags=re.S))
    assert {int(pk): int(g) for pk, g in shown.items()} == expected

    api = Client().get("/api/v1/repos/olga/proj/pushes").json()
    assert {row["id"]: row["generation"] for row in api["results"]} == expected
    last = scene.pushes[-1].pk
    assert Client().get(f"/api/v1/repos/olga/proj/pushes/{last}").json()["generation"] == 5

    feed = Client().get("/olga/proj/pushlog.atom").content
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=ns) for e in ET.fromstring(feed).findall("a:entry", ns)]  # noqa: S314 - our own feed
    assert titles[0].startswith(f"Push {scene.pushes[-1].pk} (generation 5) by olga")

    for push in scene.pushes:
        assert payload_for(push)["push"]["generation"] == expected[push.pk]


def test_a_push_without_a_log_row_is_not_listed(scene):
    stray = Push.objects.create(repository=scene.repo, pusher_name="ghost")
    main = scene.pushes[-1].ref_updates.get()
    RefUpdate.objects.create(push=stray, ref="refs/heads/main", old=main.old, new=main.new)
    listed = json_pushes("version=2&startID=0")
    assert str(stray.pk) not in listed["pushes"] and listed["lastpushid"] == scene.pushes[-1].pk
    assert f'id="push-{stray.pk}"' not in Client().get("/olga/proj/pushlog").content.decode()
    assert payload_for(stray)["push"]["generation"] is None


def queries(path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert Client().get(path).status_code == 200
    return len(captured)


@pytest.mark.parametrize(
    "path", ["/olga/proj/json-pushes?version=2&full=1", "/olga/proj/pushlog", "/olga/proj/pushlog.atom"]
)
def test_no_query_per_push(scene, path, django_assert_max_num_queries):
    few = queries(path)
    for i in range(4):
        scene.push(scene.olga, "refs/heads/main", f"more {i}", day=10 + i)
    with django_assert_max_num_queries(few):
        assert Client().get(path).status_code == 200
