"""`/<owner>/<name>/workspaces/<user>.bundle`: one user's workspace refs as a git bundle that
real git clones and fetches from; nothing for those who may not see the workspace. (Hidden and
taken-down workspaces answer as missing ones: tests/test_takedown_matrix.py; private
repositories: tests/test_visibility_matrix.py.)"""

from __future__ import annotations

import pytest
from django.test import Client

from gitcore.git import run_git
from tests.factories import UserFactory
from tests.gitutil import git
from tests.repos.histories import Work
from workspaces import bundle_views, moderation

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene(tmp_path, git_home):
    work = Work(tmp_path / "w", git_home)
    work.commit("first", {"README.md": "# project\n"})
    work.git("checkout", "-q", "-b", "topic")
    heads = {"topic": work.commit("bob's work", {"b.txt": "b\n"})}
    heads["other"] = work.commit("more", {"c.txt": "c\n"})
    work.git("checkout", "-q", "main")
    repo = work.publish(owner="olga", name="proj")
    run_git(["update-ref", "refs/users/bob/topic", heads["topic"]], repo=repo.disk_path)
    run_git(["update-ref", "refs/users/bob/deep/other", heads["other"]], repo=repo.disk_path)
    run_git(["update-ref", "refs/users/carol/x", heads["other"]], repo=repo.disk_path)
    return {"repo": repo, "heads": heads, "bob": UserFactory(username="bob"), "env": git_home}


def download(client: Client, path: str) -> tuple[int, bytes]:
    response = client.get(path)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body


def test_bundle_holds_the_users_refs_and_git_clones_and_fetches_it(scene, tmp_path):
    status, body = download(Client(), "/olga/proj/workspaces/bob.bundle")
    assert status == 200
    bundle = tmp_path / "bob.bundle"
    bundle.write_bytes(body)
    env = scene["env"]
    mirror = tmp_path / "mirror.git"
    git(env, "clone", "--quiet", "--mirror", str(bundle), str(mirror))
    refs = git(env, "for-each-ref", "--format=%(refname) %(objectname)", cwd=mirror).stdout.split("\n")
    assert sorted(filter(None, refs)) == [
        f"refs/users/bob/deep/other {scene['heads']['other']}",
        f"refs/users/bob/topic {scene['heads']['topic']}",
    ]
    clone = tmp_path / "clone"
    git(env, "clone", "--quiet", str(scene["repo"].disk_path), str(clone))
    verified = git(env, "bundle", "verify", str(bundle), cwd=clone)
    assert "complete history" in verified.stdout and "is okay" in verified.stderr
    git(env, "fetch", "--quiet", str(bundle), "refs/users/bob/*:refs/remotes/bob/*", cwd=clone)
    assert git(env, "rev-parse", "bob/topic", cwd=clone).stdout.strip() == scene["heads"]["topic"]


def test_response_is_a_download_named_after_the_repository_and_user(scene):
    response = Client().get("/olga/proj/workspaces/bob.bundle")
    assert response["Content-Type"] == "application/x-git-bundle"
    assert response["Content-Disposition"] == 'attachment; filename="proj-bob.bundle"'
    b"".join(response.streaming_content)


@pytest.mark.parametrize("username", ["nobody", "BOB*", "bob..", "-bob", "a" * 60])
def test_empty_unknown_and_invalid_workspaces_are_404_with_a_message(scene, username):
    response = Client().get(f"/olga/proj/workspaces/{username}.bundle")
    assert response.status_code == 404
    assert response.content.decode() == bundle_views.NOTHING


def test_hidden_workspace_is_404_to_others_and_served_to_its_owner(scene, tmp_path):
    staff = UserFactory(username="sam", is_staff=True)
    moderation.do_hide_workspace(repo=scene["repo"], user=scene["bob"], acting_user=staff, reason="abuse")
    assert download(Client(), "/olga/proj/workspaces/bob.bundle")[0] == 404
    owner = Client()
    owner.force_login(scene["bob"])
    status, body = download(owner, "/olga/proj/workspaces/bob.bundle")
    assert status == 200 and body.startswith(b"# v2 git bundle\n")
