"""Work pages, text, API, stack view, short-hash URLs and the dashboard; privacy and escaping."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from rest_framework.test import APIClient

from repos.models import Visibility
from repos.signals import push_recorded
from tests.eager import run_followers
from tests.factories import UserFactory
from tests.showwork.lab import DAY, Lab
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db

NOW = int(time.time())
EVIL = "<script>alert('x')</script> & <b>bold</b>"


@pytest.fixture
def lab(tmp_path, git_home) -> Lab:
    lab = Lab(tmp_path, git_home)
    lab.main = lab.commit("main one", at=NOW - 5 * DAY)
    lab.publish("refs/heads/main")
    lab.a1 = lab.commit(EVIL, at=NOW - 2 * DAY)
    lab.a2 = lab.commit("alice two", at=NOW - DAY)
    lab.publish("refs/users/alice/topic")
    return lab


def test_work_page_shows_the_graph_escaped(lab):
    response = Client().get("/owner/project/work")
    page = response.content.decode()
    assert response.status_code == 200
    assert "<svg" in page and 'aria-current="page">Work</a>' in page
    assert "<script>alert(" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(" in page
    assert f'href="/owner/project/commit/{lab.a2}"' in page
    assert "alice/topic" in page and "alice two" in page


def test_work_text_for_curl(lab):
    response = Client().get("/owner/project/work.txt")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    body = response.content.decode()
    lines = body.splitlines()
    assert lines[0].startswith("@  ") and lines[0].endswith("alice two (alice, 1 day)  alice/topic")
    assert EVIL in body  # plain text: no markup to escape
    assert lines[-1].startswith("o  ") and "main" in lines[-1]


def test_api_json_with_filters(lab):
    data = APIClient().get("/api/v1/repos/owner/project/work").json()
    assert [n["sha"] for n in data["nodes"] if n["kind"] == "draft"] == [lab.a2, lab.a1]
    assert {"from": lab.a1, "to": lab.main, "elided": 0, "kind": "solid"} in data["edges"]
    assert data["more"] == 0 and data["columns"] >= 1
    bobs = APIClient().get("/api/v1/repos/owner/project/work?user=bob").json()["nodes"]
    assert bobs and not [n for n in bobs if n["kind"] == "draft"]
    for bad in ("al*", "x\0y", "../alice", "a" * 200):
        response = APIClient().get("/api/v1/repos/owner/project/work", {"user": bad, "branch": bad})
        assert response.status_code == 200 and not [
            n for n in response.json()["nodes"] if n["kind"] == "draft"
        ]
    limited = APIClient().get("/api/v1/repos/owner/project/work?limit=1").json()
    assert limited["more"] == 0  # one stack is never split
    assert not [
        n
        for n in APIClient().get("/api/v1/repos/owner/project/work?branch=nope").json()["nodes"]
        if n["kind"] == "draft"
    ]


def test_filters_on_the_page(lab, monkeypatch, django_capture_on_commit_callbacks):
    run_followers(monkeypatch)
    alice = UserFactory(username="alice")
    client = Client()
    client.force_login(alice)
    assert "alice two" in client.get("/owner/project/work?mine=1").content.decode()
    bob = UserFactory(username="bob")
    client.force_login(bob)
    page = client.get("/owner/project/work?mine=1").content.decode()
    assert "alice two" not in page and "No unfinished work" in page
    lab.at(lab.main)
    lab.commit("stale work", at=NOW - 45 * DAY)
    lab.publish("refs/users/bob/stale")
    with django_capture_on_commit_callbacks(execute=True):
        push_recorded.send(sender=None, push_id=0, repository_id=lab.repo.pk)
    assert "stale work" not in client.get("/owner/project/work").content.decode()
    assert "stale work" in client.get("/owner/project/work?older=1").content.decode()


def test_cache_hit_and_invalidation_by_push_signal(lab, monkeypatch, django_capture_on_commit_callbacks):
    run_followers(monkeypatch)  # the receiver enqueues the bump; it runs here
    client = Client()
    assert client.get("/owner/project/work.txt")["X-Showwork-Cache"] == "miss"
    assert client.get("/owner/project/work.txt")["X-Showwork-Cache"] == "hit"
    lab.at(lab.main)
    lab.commit("carol new", at=NOW - 3600)
    lab.publish("refs/users/carol/new")
    stale = client.get("/owner/project/work.txt")
    assert stale["X-Showwork-Cache"] == "hit" and "carol new" not in stale.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        push_recorded.send(sender=None, push_id=0, repository_id=lab.repo.pk)
    fresh = client.get("/owner/project/work.txt")
    assert fresh["X-Showwork-Cache"] == "miss" and "carol new" in fresh.content.decode()


def test_stack_view(lab):
    lab.at(lab.main)
    for i in range(3):
        lab.commit(f"main moves {i}", at=NOW - 3600 + i)
    lab.publish("refs/heads/main")
    page = Client().get("/owner/project/work/stack/alice/topic").content.decode()
    assert "main is 3 commits ahead of your base." in page
    assert "alice two" in page and "&lt;script&gt;" in page and "main moves" not in page
    assert Client().get("/owner/project/work/stack/alice/nothing").status_code == 404
    assert Client().get("/owner/project/work/stack/alice").status_code == 404


def test_short_hash_urls(lab):
    client = Client()
    response = client.get(f"/owner/project/c/{lab.a2[:6]}")
    assert response.status_code == 302 and response["Location"] == f"/owner/project/commit/{lab.a2}"
    assert client.get("/owner/project/c/zzzz").status_code == 404
    assert client.get("/owner/project/c/abc").status_code == 404
    missing = "0000" if not lab.a2.startswith("0000") else "ffff"
    assert client.get(f"/owner/project/c/{missing}000000").status_code == 404


def test_ambiguous_short_hash_lists_candidates(lab, monkeypatch):
    from showwork import prefixes

    monkeypatch.setattr(prefixes, "candidates", lambda path, prefix: sorted([lab.a1, lab.a2]))
    response = Client().get("/owner/project/c/abcd")
    page = response.content.decode()
    assert response.status_code == 300
    assert lab.a1 in page and lab.a2 in page and "&lt;script&gt;" in page


def test_dashboard_lists_own_work(lab):
    alice = UserFactory(username="alice")
    Workspace.objects.create(repository=lab.repo, user=alice)
    client = Client()
    assert client.get("/dashboard").status_code == 302  # sign in first
    client.force_login(alice)
    page = client.get("/dashboard").content.decode()
    # Her ref, to propose; no graph, so no branch tips unrelated to her work.
    assert "owner/project" in page and "alice two" in page and 'class="sw-graph"' not in page
    assert "main one" not in page
    client.force_login(UserFactory(username="nobody"))
    assert "alice two" not in client.get("/dashboard").content.decode()


PRIVATE_URLS = [
    "/owner/secret/work",
    "/owner/secret/work.txt",
    "/owner/secret/work/stack/alice/topic",
    "/owner/secret/c/{sha}",
    "/api/v1/repos/owner/secret/work",
]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_repository_is_404_for_outsiders(tmp_path, git_home, url):
    lab = Lab(tmp_path, git_home, name="secret", visibility=Visibility.PRIVATE)
    lab.commit("hidden main", at=NOW - DAY)
    lab.publish("refs/heads/main")
    sha = lab.commit("hidden work", at=NOW - 3600)
    lab.publish("refs/users/alice/topic")
    url = url.format(sha=sha[:8])
    client = APIClient() if url.startswith("/api/") else Client()
    assert client.get(url).status_code == 404
    client.force_login(UserFactory(username="outsider"))
    assert client.get(url).status_code == 404
    client.force_login(lab.owner)
    assert client.get(url).status_code in (200, 302)
