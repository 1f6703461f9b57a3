"""Workspaces, refs, pushes, branch protection and workspace settings over the API and the
settings page; the effect of each setting observed with real pushes."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from workspaces import selectors
from workspaces.models import ProtectedBranch, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def api_for(pusher) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {pusher.token}")
    return client


def test_workspace_and_push_api(world):
    alice = world.add("alice")
    sha = alice.commit("work")
    assert alice.push("HEAD:refs/users/alice/topic").returncode == 0
    api = APIClient()
    listing = api.get("/api/v1/repos/owner/project/workspaces").json()
    assert [(w["username"], w["refs"], w["state"]) for w in listing] == [("alice", 1, "active")]
    detail = api.get("/api/v1/repos/owner/project/workspaces/alice").json()
    assert detail["refs"][0] | {"committed": None} == {
        "ref": "refs/users/alice/topic",
        "name": "topic",
        "sha": sha,
        "subject": "work",
        "committed": None,
        "ahead": 1,
        "behind": 0,
    }
    assert api.get("/api/v1/repos/owner/project/workspaces/nobody").status_code == 404
    pushes = api.get("/api/v1/repos/owner/project/pushes").json()
    assert pushes["count"] == 2
    newest = pushes["results"][0]
    assert newest["user"] == "alice" and newest["workspace"] is True and newest["commits"] == [sha]
    assert api.get(f"/api/v1/repos/owner/project/pushes/{newest['id']}").json() == newest


def test_branch_protection_over_the_api_takes_effect(world):
    owner = world.owner
    api = api_for(owner)
    response = api.put(
        "/api/v1/repos/owner/project/protected-branches/release", {"allow_force": False}, format="json"
    )
    assert response.status_code == 200
    assert owner.push("main:refs/heads/release").returncode == 0
    result = owner.push(":refs/heads/release")
    assert result.returncode != 0 and "protected branch and cannot be deleted" in result.stderr
    assert api.delete("/api/v1/repos/owner/project/protected-branches/release").status_code == 204
    assert owner.push(":refs/heads/release").returncode == 0
    bad = api.put("/api/v1/repos/owner/project/protected-branches/a..b", {}, format="json")
    assert bad.status_code == 400
    reader = world.add("rita")
    assert (
        api_for(reader).put("/api/v1/repos/owner/project/protected-branches/x", {}, format="json").status_code
        == 403
    )


def test_maintainers_may_edit_setting_takes_effect(world):
    alice = world.add("alice")
    mona = world.add("mona", "maintainer")
    alice.commit("alice")
    assert alice.push("HEAD:refs/users/alice/t").returncode == 0
    api = api_for(world.owner)
    response = api.patch(
        "/api/v1/repos/owner/project/workspace-settings",
        {"maintainers_may_edit": False, "ref_limit": 5},
        format="json",
    )
    assert response.json() == {
        "maintainers_may_edit": False,
        "ref_limit": 5,
        "delete_merged_refs": True,
        "branch_pushes_to_workspace": True,
        "protected_tags": [],
    }
    mona.git("fetch", "--quiet", mona.remote, "refs/users/alice/t", check=True)
    mona.git("checkout", "--quiet", "FETCH_HEAD", check=True)
    mona.commit("maintainer edit")
    result = mona.push("HEAD:refs/users/alice/t")
    assert result.returncode != 0 and "alice's workspace" in result.stderr
    assert (
        api_for(mona)
        .patch("/api/v1/repos/owner/project/workspace-settings", {"ref_limit": 9}, format="json")
        .status_code
        == 403
    )


def test_protected_tags_over_the_api_take_effect(world):
    owner, mona = world.owner, world.add("mona", "maintainer")
    api = api_for(owner)
    response = api.patch(
        "/api/v1/repos/owner/project/workspace-settings",
        {"protected_tags": ["v*", " refs/tags/rc-? ", "v*"]},
        format="json",
    )
    assert response.status_code == 200 and response.json()["protected_tags"] == ["v*", "rc-?"]
    # Created as any tag, by a maintainer.
    assert mona.push(f"{world.base_sha}:refs/tags/v1").returncode == 0
    assert mona.push(f"{world.base_sha}:refs/tags/nightly").returncode == 0
    moved = mona.commit("after the release")
    # Moved by nobody: a maintainer's force-push and an admin's alike.
    for result in (mona.push(f"+{moved}:refs/tags/v1"), owner.push(f"+{owner.commit('admin')}:refs/tags/v1")):
        assert result.returncode != 0
        assert (
            "remote: hostsite: refs/tags/v1 is a protected tag (v*) and cannot be moved; "
            "tag the new commit under a new name" in result.stderr
        )
    assert world.refs()["refs/tags/v1"] == world.base_sha
    assert mona.push(f"+{moved}:refs/tags/nightly").returncode == 0  # no pattern matches it
    deleted = mona.push(":refs/tags/v1")
    assert deleted.returncode != 0 and "only the repository's admins may delete it" in deleted.stderr
    assert owner.push(":refs/tags/v1").returncode == 0
    assert "refs/tags/v1" not in world.refs()
    bad = api.patch(
        "/api/v1/repos/owner/project/workspace-settings", {"protected_tags": ["a b"]}, format="json"
    )
    assert bad.status_code == 400 and selectors.rules_for(world.repo).protected_tags == ("v*", "rc-?")


def test_settings_page(world):
    client = Client()
    client.force_login(world.owner.user)
    assert client.get("/owner/project/settings/workspaces").status_code == 200
    client.post(
        "/owner/project/settings/workspaces", {"action": "protect", "branch": "stable", "allow_force": "on"}
    )
    assert ProtectedBranch.objects.get(repository=world.repo, name="stable").allow_force
    client.post("/owner/project/settings/workspaces", {"action": "settings", "ref_limit": "3"})
    ws = WorkspaceSettings.objects.get(repository=world.repo)
    assert ws.ref_limit == 3 and ws.maintainers_may_edit is False  # unchecked box
    client.post(
        "/owner/project/settings/workspaces", {"action": "protect-tags", "protected_tags": "v*\r\n\r\nrc-?\n"}
    )
    assert WorkspaceSettings.objects.get(repository=world.repo).tag_patterns() == ("v*", "rc-?")
    assert "rc-?" in client.get("/owner/project/settings/workspaces").content.decode()
    response = client.post(
        "/owner/project/settings/workspaces", {"action": "protect", "branch": "-bad"}, follow=True
    )
    assert "not a valid branch name" in response.content.decode()
    outsider = Client()
    outsider.force_login(world.add("eve").user)
    assert outsider.get("/owner/project/settings/workspaces").status_code == 404


def test_branch_pushes_setting_on_the_page_and_in_the_api(world):
    owner = Client()
    owner.force_login(world.owner.user)
    page = owner.get("/owner/project/settings/workspaces").content.decode()
    assert 'name="branch_pushes_to_workspace" checked' in page  # on by default
    assert "Branch pushes by contributors go to their workspace" in page
    owner.post("/owner/project/settings/workspaces", {"action": "settings", "delete_merged_refs": "on"})
    assert selectors.rules_for(world.repo).map_branches is False  # unchecked box: off
    assert (
        api_for(world.owner)
        .get("/api/v1/repos/owner/project/workspace-settings")
        .json()["branch_pushes_to_workspace"]
        is False
    )
    # The repository page says how branch pushes go, while the setting is on.
    assert "puts your branch in your workspace" not in owner.get("/owner/project").content.decode()
    response = api_for(world.owner).patch(
        "/api/v1/repos/owner/project/workspace-settings", {"branch_pushes_to_workspace": True}, format="json"
    )
    assert response.json()["branch_pushes_to_workspace"] is True
    assert selectors.rules_for(world.repo).map_branches is True
    assert "puts your branch in your workspace" in owner.get("/owner/project").content.decode()
    bad = api_for(world.owner).patch(
        "/api/v1/repos/owner/project/workspace-settings",
        {"branch_pushes_to_workspace": "maybe"},
        format="json",
    )
    assert bad.status_code == 400 and selectors.rules_for(world.repo).map_branches is True
    maintainer = world.add("mona", "maintainer")
    refused = api_for(maintainer).patch(
        "/api/v1/repos/owner/project/workspace-settings", {"branch_pushes_to_workspace": False}, format="json"
    )
    assert refused.status_code == 403 and selectors.rules_for(world.repo).map_branches is True


def test_ref_limit_is_enforced_for_named_and_nameless_pushes(world):
    WorkspaceSettings.objects.create(repository=world.repo, ref_limit=2)
    alice = world.add("alice")
    for i in range(2):
        alice.commit(f"w{i}")
        assert alice.push(f"HEAD:refs/users/alice/r{i}").returncode == 0
    alice.commit("one too many")
    result = alice.push("HEAD:refs/users/alice/r2")
    assert result.returncode != 0 and "the limit" in result.stderr
    alice.git("checkout", "--quiet", "--orphan", "fresh", check=True)
    alice.commit("nameless", name="n.txt")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode != 0 and "the limit" in result.stdout + result.stderr
    assert len([r for r in world.refs() if r.startswith("refs/users/alice/")]) == 2


def test_frozen_workspace_refuses_its_owner(world):
    from workspaces.models import Workspace

    alice = world.add("alice")
    Workspace.objects.create(repository=world.repo, user=alice.user, frozen=True)
    alice.commit("frozen out")
    result = alice.push("HEAD:refs/users/alice/x")
    assert result.returncode != 0 and "frozen by a moderator" in result.stderr
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode != 0 and "frozen" in result.stderr
    # Other contributors are not affected.
    bob = world.add("bob")
    bob.commit("bob")
    assert bob.push("HEAD:refs/users/bob/x").returncode == 0
