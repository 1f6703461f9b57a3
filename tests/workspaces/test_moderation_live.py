"""Moderation with real git through the live server: each action's effect as git and the pages
see it (push refused, refs not advertised, fetch fails, objects gone after a purge), its audit
row, the owner's notification, and who may act."""

from __future__ import annotations

import base64
import subprocess

import pytest
from django.test import Client

from notifications.models import Notification
from repos import services as repo_services
from repos.errors import Forbidden
from repos.models import AuditEntry, Role
from tests.factories import UserFactory
from tests.gitutil import git
from workspaces import moderation
from workspaces.models import RepositoryBan, Workspace, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scene(world):
    # Workspace commits never land on main here; still, keep cleanup out of the way.
    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    alice = world.add("alice")
    sha = alice.commit("alice's work", name="alice.txt")
    result = alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode == 0, result.stderr
    bob = world.add("bob")
    staff = UserFactory(username="staff", is_staff=True)
    world.alice, world.bob, world.staff, world.sha = alice, bob, staff, sha
    return world


def ls_remote(pusher) -> dict[str, str]:
    # git fetches a public repository anonymously unless challenged: send the credentials.
    auth = base64.b64encode(f"{pusher.username}:{pusher.token}".encode()).decode()
    out = pusher.git(
        "-c", f"http.extraHeader=Authorization: Basic {auth}", "ls-remote", pusher.remote, check=True
    ).stdout
    return {ref: oid for oid, ref in (line.split("\t") for line in out.splitlines())}


def anon_ls_remote(world) -> set[str]:
    url = f"http://{world.host}/{world.repo.full_name}.git"
    out = git(world.env, "ls-remote", url, check=True).stdout
    return {line.split("\t")[1] for line in out.splitlines()}


def server_has(world, sha: str) -> bool:
    return (
        subprocess.run(
            ["git", "--git-dir", str(world.repo.disk_path), "cat-file", "-e", sha], capture_output=True
        ).returncode
        == 0
    )


def last_audit(world) -> AuditEntry:
    return AuditEntry.objects.order_by("-pk").first()


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_freeze_refuses_the_owners_push_and_stays_visible(scene):
    owner, alice = scene.owner.user, scene.alice
    moderation.do_freeze_workspace(repo=scene.repo, user=alice.user, acting_user=owner, reason="spam pushes")
    alice.commit("more", name="alice.txt")
    result = alice.push("HEAD:refs/users/alice/feature")
    assert result.returncode != 0 and "frozen by a moderator" in result.stderr
    assert alice.push("HEAD:refs/for/main").returncode != 0
    assert ls_remote(scene.bob)["refs/users/alice/feature"] == scene.sha  # still visible
    entry = last_audit(scene)
    assert (entry.action, entry.actor, entry.target_user, entry.repository, entry.reason) == (
        "freeze",
        owner,
        alice.user,
        scene.repo,
        "spam pushes",
    )
    assert (entry.before, entry.after) == (
        {"frozen": False, "hidden": False, "taken_down": False},
        {"frozen": True, "hidden": False, "taken_down": False},
    )
    note = Notification.objects.get(user=alice.user, kind="workspace_freeze")
    assert "spam pushes" in note.text and note.url == "/owner/project/workspaces/alice"

    moderation.do_restore_workspace(repo=scene.repo, user=alice.user, acting_user=owner, reason="talked")
    assert alice.push("HEAD:refs/users/alice/feature").returncode == 0
    assert last_audit(scene).action == "restore"
    assert Notification.objects.filter(user=alice.user, kind="workspace_restore").exists()


def test_hide_hides_refs_from_everyone_but_owner_and_admins(scene):
    maintainer = scene.add("maud", "maintainer")
    moderation.do_hide_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.owner.user, reason="offensive branch names"
    )
    ref = "refs/users/alice/feature"
    assert ref not in ls_remote(scene.bob)
    assert ref not in anon_ls_remote(scene)
    assert ref not in ls_remote(maintainer)
    assert ls_remote(scene.alice)[ref] == scene.sha  # the owner
    assert ls_remote(scene.owner)[ref] == scene.sha  # a repository admin
    auth = base64.b64encode(f"bob:{scene.bob.token}".encode()).decode()
    fetch = scene.bob.git(
        "-c", f"http.extraHeader=Authorization: Basic {auth}", "fetch", scene.bob.remote, ref
    )
    assert fetch.returncode != 0 and "couldn't find remote ref" in fetch.stderr
    # The pages: 404 to others, shown to the owner.
    page = f"/{scene.repo.full_name}/workspaces/alice"
    assert signed_in(scene.bob.user).get(page).status_code == 404
    assert signed_in(scene.alice.user).get(page).status_code == 200
    # Pushing still works for the owner (hiding is not freezing).
    scene.alice.commit("still working", name="alice.txt")
    assert scene.alice.push("HEAD:refs/users/alice/feature").returncode == 0
    assert last_audit(scene).action == "hide"
    moderation.do_restore_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.owner.user, reason="renamed"
    )
    assert ref in ls_remote(scene.bob)


def test_take_down_moves_refs_out_of_reach_and_restore_brings_them_back(scene):
    repo, alice, staff = scene.repo, scene.alice, scene.staff
    moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=staff, reason="DMCA #42")
    refs = scene.refs()
    assert "refs/users/alice/feature" not in refs and refs["refs/takedown/alice/feature"] == scene.sha
    for pusher in (alice, scene.bob, scene.owner):
        assert not [r for r in ls_remote(pusher) if "alice" in r]
    assert not [r for r in anon_ls_remote(scene) if "alice" in r or "takedown" in r]
    fetch = scene.bob.git("fetch", scene.bob.remote, "refs/takedown/alice/feature")
    assert fetch.returncode != 0
    # No pushes while under legal hold, not even new refs.
    result = alice.push("HEAD:refs/users/alice/again")
    assert result.returncode != 0 and "was taken down by a moderator" in result.stderr
    # The commit page: staff only.
    page = f"/{repo.full_name}/commit/{scene.sha}"
    assert Client().get(page).status_code == 404
    for user in (alice.user, scene.owner.user, scene.bob.user):
        assert signed_in(user).get(page).status_code == 404
    assert signed_in(staff).get(page).status_code == 200
    for other in (
        f"tree/{scene.sha}",
        f"blob/{scene.sha}/alice.txt",
        f"raw/{scene.sha}/alice.txt",
        f"commits/{scene.sha}",
        f"compare/main...{scene.sha}",
        f"archive/{scene.sha}.tar.gz",
    ):
        assert signed_in(scene.bob.user).get(f"/{repo.full_name}/{other}").status_code == 404, other
        assert signed_in(staff).get(f"/{repo.full_name}/{other}").status_code == 200, other
    assert Client().get(f"/{repo.full_name}/commit/{scene.base_sha}").status_code == 200  # main's: untouched
    entry = last_audit(scene)
    assert entry.action == "take_down" and entry.before["refs"] == {"refs/users/alice/feature": scene.sha}
    assert entry.after == {
        "frozen": False,
        "hidden": False,
        "taken_down": True,
        "refs": {"refs/takedown/alice/feature": scene.sha},
    }
    assert Notification.objects.filter(user=alice.user, kind="workspace_take_down").exists()

    # A repository admin may not restore a take-down; staff may.
    with pytest.raises(Forbidden):
        moderation.do_restore_workspace(repo=repo, user=alice.user, acting_user=scene.owner.user, reason="x")
    moderation.do_restore_workspace(repo=repo, user=alice.user, acting_user=staff, reason="counter-notice")
    assert ls_remote(scene.bob)["refs/users/alice/feature"] == scene.sha
    assert "refs/takedown/alice/feature" not in scene.refs()
    assert last_audit(scene).after["refs"] == {"refs/users/alice/feature": scene.sha}


def test_purge_removes_the_objects(scene):
    repo, alice = scene.repo, scene.alice
    blob = alice.git("rev-parse", "HEAD:alice.txt", check=True).stdout.strip()
    second = alice.commit("second secret", name="secret.txt")
    assert alice.push("HEAD:refs/users/alice/other").returncode == 0
    moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=scene.staff, reason="leak")
    assert server_has(scene, second) and server_has(scene, blob)
    moderation.do_purge_workspace(repo=repo, user=alice.user, acting_user=scene.staff, reason="leaked keys")
    assert not server_has(scene, second) and not server_has(scene, scene.sha) and not server_has(scene, blob)
    assert server_has(scene, scene.base_sha)  # main's history stays
    assert not [r for r in scene.refs() if "alice" in r]
    entry = last_audit(scene)
    assert entry.action == "purge" and set(entry.before["refs"]) == {
        "refs/takedown/alice/feature",
        "refs/takedown/alice/other",
    }
    assert (
        git(scene.env, "clone", "--quiet", scene.bob.remote, str(scene.tmp / "after"), check=False).returncode
        == 0
    )


def test_purge_keeps_objects_other_refs_reach(scene):
    # bob built on alice's work: purging alice keeps what bob's workspace reaches.
    bob = scene.bob
    bob.git("fetch", "--quiet", bob.remote, "refs/users/alice/feature", check=True)
    bob.git("checkout", "--quiet", "FETCH_HEAD", check=True)
    bob.commit("bob on top", name="bob.txt")
    assert bob.push("HEAD:refs/users/bob/on-alice").returncode == 0
    moderation.do_purge_workspace(repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="x")
    assert server_has(scene, scene.sha)


def test_permissions(scene):
    repo, alice = scene.repo, scene.alice
    maintainer = scene.add("maud", "maintainer").user
    with pytest.raises(Forbidden):
        moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=maintainer, reason="x")
    with pytest.raises(Forbidden):
        moderation.do_take_down_workspace(repo=repo, user=alice.user, acting_user=maintainer, reason="x")
    # A repository admin: freeze here, but not take down or purge, and nothing elsewhere.
    with pytest.raises(Forbidden):
        moderation.do_take_down_workspace(
            repo=repo, user=alice.user, acting_user=scene.owner.user, reason="x"
        )
    with pytest.raises(Forbidden):
        moderation.do_purge_workspace(repo=repo, user=alice.user, acting_user=scene.owner.user, reason="x")
    other = repo_services.repository_create(owner=UserFactory(username="carol"), name="elsewhere")
    with pytest.raises(Forbidden):
        moderation.do_freeze_workspace(repo=other, user=alice.user, acting_user=scene.owner.user, reason="x")
    admin = UserFactory(username="adam")
    repo_services.membership_set(repo=repo, user=admin, role=Role.ADMIN)
    moderation.do_freeze_workspace(repo=repo, user=alice.user, acting_user=admin, reason="x")
    # Staff act everywhere.
    moderation.do_freeze_workspace(repo=other, user=alice.user, acting_user=scene.staff, reason="x")
    assert Workspace.objects.get(repository=other, user=alice.user).frozen
    with pytest.raises(Forbidden):
        moderation.do_ban_from_site(user=alice.user, acting_user=scene.owner.user, reason="x")
    # Refused actions left no audit row.
    assert list(AuditEntry.objects.values_list("actor__username", "action").order_by("pk")) == [
        ("adam", "freeze"),
        ("staff", "freeze"),
    ]


def test_repository_ban_refuses_every_push(scene):
    alice = scene.alice
    repo_services.membership_set(repo=scene.repo, user=alice.user, role=Role.MAINTAINER)
    moderation.do_ban_from_repository(
        repo=scene.repo, user=alice.user, acting_user=scene.owner.user, reason="abuse"
    )
    assert RepositoryBan.objects.filter(repository=scene.repo, user=alice.user).exists()
    ws = Workspace.objects.get(repository=scene.repo, user=alice.user)
    assert ws.frozen and ws.frozen_by_ban
    for refspec in ("HEAD:refs/heads/alices-branch", "HEAD:refs/users/alice/x", "HEAD:refs/users/bob/x"):
        result = alice.push(refspec)
        assert result.returncode != 0 and "banned from pushing" in result.stderr, refspec
    assert scene.bob.push("HEAD:refs/users/bob/x").returncode == 0  # others are not affected
    assert last_audit(scene).action == "ban"
    moderation.do_unban_from_repository(
        repo=scene.repo, user=alice.user, acting_user=scene.owner.user, reason="ok"
    )
    assert not Workspace.objects.get(
        repository=scene.repo, user=alice.user
    ).frozen  # the ban's freeze goes with it
    assert alice.push("HEAD:refs/heads/alices-branch").returncode == 0


def test_site_ban_refuses_git_and_sign_in(scene):
    alice = scene.alice
    alice.user.set_password("a long passphrase")
    alice.user.save()
    moderation.do_ban_from_site(user=alice.user, acting_user=scene.staff, reason="spam across the site")
    result = alice.push("HEAD:refs/users/alice/x")
    assert result.returncode != 0
    assert not Client().login(username="alice", password="a long passphrase")
    entry = last_audit(scene)
    assert (entry.action, entry.before, entry.after) == (
        "site_ban",
        {"is_active": True},
        {"is_active": False},
    )
    moderation.do_unban_from_site(user=alice.user, acting_user=scene.staff, reason="appeal")
    assert alice.push("HEAD:refs/users/alice/x").returncode == 0


def fetch_by_id(pusher, sha: str, version: int):
    auth = base64.b64encode(f"{pusher.username}:{pusher.token}".encode()).decode()
    return pusher.git(
        "-c",
        f"protocol.version={version}",
        "-c",
        f"http.extraHeader=Authorization: Basic {auth}",
        "fetch",
        "--no-tags",
        pusher.remote,
        sha,
    )


@pytest.mark.parametrize("version", [0, 2])
def test_taken_down_and_hidden_objects_are_not_fetchable_by_id(scene, version):
    # A fresh clone of main knows nothing of alice's commit; asking for it by id must fail.
    carol = scene.add("carol")
    hidden_sha = scene.alice.commit("hidden work", name="h.txt")
    assert scene.alice.push("HEAD:refs/users/alice/feature").returncode == 0
    moderation.do_hide_workspace(repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="x")
    assert fetch_by_id(carol, hidden_sha, version).returncode != 0
    assert fetch_by_id(scene.owner, hidden_sha, version).returncode == 0  # an admin may
    moderation.do_restore_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="x"
    )
    moderation.do_take_down_workspace(
        repo=scene.repo, user=scene.alice.user, acting_user=scene.staff, reason="x"
    )
    for pusher in (carol, scene.bob):  # (alice has her commits locally)
        result = fetch_by_id(pusher, scene.sha, version)
        assert result.returncode != 0, (pusher.username, result.stderr)
    # Canonical content is still fetchable by id.
    assert fetch_by_id(carol, scene.base_sha, version).returncode == 0
