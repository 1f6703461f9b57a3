"""Workspace pages, driven by real pushes through the live server."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from gitcore.git import run_git
from tests.support.wait import wait_until
from workspaces.models import Workspace, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def busy(world):
    alice = world.add("alice")
    alice.commit("alice one", name="alice.txt")
    alice.commit("<script>alert('x')</script> two", name="a<b>.txt")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    bob = world.add("bob")
    bob.commit("bob's nameless work", name="bob.txt")
    assert bob.push("HEAD:refs/for/main").returncode == 0
    # main moves on after alice branched off.
    world.owner.commit("main moves")
    assert world.owner.push("main").returncode == 0
    return world


def rows_followed(world, *names: str) -> bool:
    """The worker recorded the pushes on their users' Workspace rows (workspaces.tasks)."""
    rows = Workspace.objects.filter(repository=world.repo, user__username__in=names)
    return wait_until(
        lambda: rows.count() == len(names), timeout=30, what=f"Workspace rows for {', '.join(names)}"
    )


def test_workspaces_tab_lists_users(celery_worker_process, busy):
    page = Client().get("/owner/project/workspaces").content.decode()
    assert "alice" in page and "bob" in page
    assert rows_followed(busy, "alice", "bob")
    row = Workspace.objects.get(repository=busy.repo, user__username="alice")
    assert row.last_push_at is not None


def test_user_workspace_shows_refs_ahead_behind(busy):
    page = Client().get("/owner/project/workspaces/alice").content.decode()
    assert "<code>feature</code>" in page
    assert "<td>2</td><td>1</td>" in page  # 2 ahead, 1 behind main
    assert 'href="/owner/project/workspaces/alice.bundle"' in page


def test_ref_page_shows_commits_and_escaped_diff(busy):
    response = Client().get("/owner/project/workspaces/alice/feature")
    page = response.content.decode()
    assert response.status_code == 200
    assert "alice one" in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; two" in page
    assert "<script>alert(" not in page
    # An added line, numbered on the new side only.
    assert (
        '<tr class="add"><td class="ln"></td><td class="ln">1</td><td class="code">+alice one</td></tr>'
        in page
    )
    stat = page.split('<p class="diffstat">', 1)[1].split("</p>", 1)[0]
    assert "2 files changed" in stat and "diff --git" not in stat
    assert "a&lt;b&gt;.txt" in page and "main moves" not in page  # only what the ref brings


def test_nameless_ref_page(busy):
    name = next(r for r in busy.refs() if r.startswith("refs/users/bob/main-"))
    response = Client().get("/owner/project/workspaces/bob/" + name.removeprefix("refs/users/bob/"))
    assert response.status_code == 200 and "bob&#x27;s nameless work" in response.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/owner/project/workspaces/alice/nope",
        "/owner/project/workspaces/alice/..%2f..",
        "/owner/project/workspaces/alice/a..b",
        "/owner/nothing/workspaces",
    ],
)
def test_missing_refs_are_404(busy, path):
    assert Client().get(path).status_code == 404


def test_hidden_workspace_is_visible_to_owner_and_admins_only(celery_worker_process, busy):
    alice = busy.users["alice"].user
    assert rows_followed(busy, "alice")
    Workspace.objects.filter(user=alice).update(hidden=True)
    anon = Client()
    assert "alice" not in anon.get("/owner/project/workspaces").content.decode()
    assert anon.get("/owner/project/workspaces/alice").status_code == 404
    me = Client()
    me.force_login(alice)
    assert me.get("/owner/project/workspaces/alice").status_code == 200
    owner = Client()
    owner.force_login(busy.owner.user)
    assert "alice" in owner.get("/owner/project/workspaces").content.decode()


def test_contribute_box_has_the_signed_in_users_commands(busy):
    client = Client()
    client.force_login(busy.users["alice"].user)
    page = client.get("/owner/project").content.decode()
    assert "git push origin my-fix" in page and "puts your branch in your workspace" in page
    assert "git push origin HEAD:refs/for/main" in page
    assert "git config --add remote.origin.fetch '+refs/users/alice/*:refs/remotes/origin/mine/*'" in page
    assert "refs/users/&lt;username&gt;/*:refs/remotes/&lt;username&gt;/*" in page
    assert "/owner/project/workspaces/&lt;username&gt;.bundle" in page
    # With branch pushes not mapped, the box gives the push refspec instead.
    WorkspaceSettings.objects.update_or_create(
        repository=busy.repo, defaults={"branch_pushes_to_workspace": False}
    )
    page = client.get("/owner/project").content.decode()
    assert "puts your branch in your workspace" not in page
    assert "git config remote.origin.push 'refs/heads/*:refs/users/alice/*'" in page


def test_user_workspace_is_paginated_with_counts_per_page(busy):
    tip = busy.refs()["refs/users/alice/feature"]
    stdin = "".join(f"create refs/users/alice/many/{i:03d} {tip}\n" for i in range(60)).encode()
    run_git(["update-ref", "--stdin"], repo=busy.repo.disk_path, input=stdin)
    first = Client().get("/owner/project/workspaces/alice").content.decode()
    assert first.count("<td>2</td><td>1</td>") == 50  # 50 rows a page, each with ahead/behind
    assert "Page 1 of 2 · 61 in all" in first and 'rel="next" href="?page=2"' in first
    second = Client().get("/owner/project/workspaces/alice?page=2&x=%3Cb%3E").content.decode()
    assert second.count("<td>2</td><td>1</td>") == 11
    assert 'rel="prev" href="?page=1&amp;x=%3Cb%3E"' in second  # other parameters kept, escaped
    api = APIClient().get("/api/v1/repos/owner/project/workspaces/alice?per_page=5&page=2").json()
    assert api["ref_count"] == 61 and len(api["refs"]) == 5 and "page=3" in api["next"]
    assert all(r["ahead"] == 2 and r["behind"] == 1 for r in api["refs"])
