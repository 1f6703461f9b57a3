"""The Pushlog tab (/<owner>/<name>/pushlog): pushes newest first with who, when, the refs they
moved and the commits they brought; filters by user, ref, dates and workspaces; paging; bad
filters answered with a message; moderated work never shown. Pushes are recorded as the smart
HTTP view records them (repos.pushes), on a real repository."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest
from django.test import Client

from gitcore.git import run_git
from gitcore.gittools import ZERO_OID, rev_parse
from repos import pushes
from repos.models import Push
from repos.views import pushlog_page
from tests.factories import UserFactory
from tests.repos.histories import Work

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class Scene:
    def __init__(self, tmp_path, git_home):
        self.work = Work(tmp_path / "work", git_home)
        self.work.commit("initial", {"README.md": "# proj\n"})
        self.repo = self.work.publish()
        self.olga = self.repo.owner
        self.alice = UserFactory(username="alice")
        self.imported = Push.objects.get(repository=self.repo)  # the import's refs

    def push(self, user, ref: str, message: str, *, branch: str = "main", day: int = 0) -> Push:
        """Commit `message` on the working copy's `branch` and move `ref` of the hosted
        repository to it, recorded as `user`'s push on day `day`."""
        if self.work.git("branch", "--list", branch) == "":
            self.work.git("branch", branch, "main")
        self.work.git("checkout", "--quiet", branch)
        self.work.commit(message, {f"{message.replace(' ', '-')}.txt": message + "\n"})
        old = rev_parse(self.repo.disk_path, ref) or ZERO_OID
        run_git(
            ["fetch", "--quiet", str(self.work.path), f"+refs/heads/{branch}:{ref}"], repo=self.repo.disk_path
        )
        new = rev_parse(self.repo.disk_path, ref)
        push = pushes.push_record(
            repo=self.repo,
            pusher=user,
            updates=[pushes.Update(old, new, ref)],
            created_at=T0 + timedelta(days=day),
        )
        assert push is not None
        return push


@pytest.fixture
def scene(tmp_path, git_home):
    scene = Scene(tmp_path, git_home)
    scene.first = scene.push(scene.olga, "refs/heads/main", "olga one", day=0)
    scene.second = scene.push(scene.olga, "refs/heads/main", "olga two", day=1)
    scene.feature = scene.push(scene.olga, "refs/heads/feature", "feature work", branch="feature", day=2)
    scene.work_push = scene.push(scene.alice, "refs/users/alice/w", "alice draft", branch="alice", day=3)
    return scene


def page(path: str, status: int = 200, client: Client | None = None) -> str:
    response = (client or Client()).get(path)
    assert response.status_code == status, (response.status_code, response.content[:400])
    return response.content.decode()


def push_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<li class="card push" id="push-(\d+)"', html)]


def test_pushes_newest_first_with_refs_commits_and_links(scene):
    html = page("/olga/proj/pushlog")
    # Workspaces are left out unless asked for.
    assert push_ids(html) == [scene.feature.pk, scene.second.pk, scene.first.pk, scene.imported.pk]
    second = scene.second.ref_updates.get()
    assert f'href="/olga/proj/compare/{second.old}...{second.new}"' in html
    assert f'href="/olga/proj/commit/{second.new}"' in html and "olga two" in html
    created = scene.feature.ref_updates.get()
    assert "created at" in html and f'href="/olga/proj/commit/{created.new}"' in html
    assert (
        '<link rel="alternate" type="application/atom+xml"' in html
        and 'href="/olga/proj/pushlog.atom"' in html
    )
    assert 'href="/olga/proj/json-pushes?workspaces=0&amp;version=2"' in html
    assert (
        f'href="/olga/proj/json-pushes?version=2&amp;full=1&amp;startID={scene.second.pk - 1}&amp;endID={scene.second.pk}"'
        in html
    )
    assert 'aria-current="page">Pushlog</a>' in html  # the tab is this page
    with_workspaces = page("/olga/proj/pushlog?workspaces=1")
    assert push_ids(with_workspaces) == [
        scene.work_push.pk,
        scene.feature.pk,
        scene.second.pk,
        scene.first.pk,
        scene.imported.pk,
    ]
    assert "refs/users/alice/w" in with_workspaces and "alice draft" in with_workspaces


def test_filters_by_user_ref_and_dates_like_json_pushes(scene):
    assert push_ids(page("/olga/proj/pushlog?user=ALICE&workspaces=1")) == [scene.work_push.pk]
    assert push_ids(page("/olga/proj/pushlog?user=alice")) == []
    assert push_ids(page("/olga/proj/pushlog?ref=main")) == [
        scene.second.pk,
        scene.first.pk,
        scene.imported.pk,
    ]
    assert push_ids(page("/olga/proj/pushlog?ref=refs/heads/feature")) == [scene.feature.pk]
    assert push_ids(page("/olga/proj/pushlog?ref=nosuch")) == []
    html = page("/olga/proj/pushlog?startdate=2026-03-01T13:00:00&enddate=2026-03-03")
    assert push_ids(html) == [scene.second.pk]
    # The json-pushes link carries the same filters, and json-pushes agrees.
    link = unescape(
        re.search(r'href="(/olga/proj/json-pushes\?[^"]*)" rel="nofollow">json-pushes', html).group(1)
    )
    assert "startdate=2026-03-01T13%3A00%3A00" in link and "enddate=2026-03-03" in link
    assert list(Client().get(link).json()["pushes"]) == [str(scene.second.pk)]
    by_ref = Client().get("/olga/proj/json-pushes?ref=main&version=2").json()["pushes"]
    assert list(by_ref) == [str(scene.imported.pk), str(scene.first.pk), str(scene.second.pk)]


def test_pages_older_and_newer(scene, monkeypatch):
    monkeypatch.setattr(pushlog_page, "PER_PAGE", 2)
    first = page("/olga/proj/pushlog?workspaces=1")
    assert push_ids(first) == [scene.work_push.pk, scene.feature.pk] and "Newer" not in first
    older = unescape(re.search(r'rel="next" href="([^"]+)"', first).group(1))
    assert "workspaces=1" in older
    second = page(older)
    assert push_ids(second) == [scene.second.pk, scene.first.pk]
    third = page(unescape(re.search(r'rel="next" href="([^"]+)"', second).group(1)))
    assert push_ids(third) == [scene.imported.pk] and 'rel="next"' not in third
    newer = unescape(re.search(r'rel="prev" href="([^"]+)"', second).group(1))
    assert push_ids(page(newer)) == [scene.work_push.pk, scene.feature.pk]


@pytest.mark.parametrize(
    "query",
    [
        "startdate=yesterday",
        "enddate=2026-13-45",
        "startdate=999999999999",
        "endID=abc",
        "startID=-1",
        "startID=99999999999999999999999",
        "ref=" + "x" * 300,
    ],
)
def test_bad_filters_are_a_400_with_a_message(scene, query):
    html = page(f"/olga/proj/pushlog?{query}", status=400)
    assert 'class="message error" role="alert"' in html and push_ids(html) == []
    assert Client().get(f"/olga/proj/json-pushes?{query}").status_code == 400


def test_commit_subjects_are_escaped_and_long_pushes_link_to_the_rest(scene, monkeypatch):
    scene.push(scene.olga, "refs/heads/main", "<script>alert(1)</script>", day=4)
    html = page("/olga/proj/pushlog")
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    monkeypatch.setattr(pushlog_page, "COMMITS_SHOWN", 0)
    assert "All 1 commits of this push" in page("/olga/proj/pushlog")


def test_taken_down_and_hidden_pushes_are_never_shown(scene):
    from workspaces import moderation

    sam = UserFactory(username="sam", is_staff=True)
    secret = scene.work_push.ref_updates.get().new
    moderation.do_take_down_workspace(repo=scene.repo, user=scene.alice, acting_user=sam, reason="DMCA")
    outsider = Client()
    outsider.force_login(UserFactory(username="otto"))
    for client in (Client(), outsider):
        for query in ("workspaces=1", "workspaces=1&user=alice", "workspaces=1&ref=refs/users/alice/w"):
            html = page(f"/olga/proj/pushlog?{query}", client=client)
            assert scene.work_push.pk not in push_ids(html)
            assert secret not in html and "alice draft" not in html
            assert "refs/users/alice" not in html.replace(
                'value="refs/users/alice/w"', ""
            )  # the filter typed


def test_private_repository_pushlog_is_404_to_outsiders(tmp_path, git_home):
    work = Work(tmp_path / "work", git_home)
    work.commit("initial", {"README.md": "x\n"})
    repo = work.publish(private=True)
    page("/olga/proj/pushlog", status=404)
    owner = Client()
    owner.force_login(repo.owner)
    page("/olga/proj/pushlog", client=owner)
