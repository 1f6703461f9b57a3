"""The policy matrix with real git: role x ref class x create/update/force/delete, pushed
through the live server, observed in the repository. And what each pusher is advertised."""

from __future__ import annotations

import base64
import subprocess
import urllib.request

import pytest

from tests.repos.test_pushpolicy import expected
from workspaces.models import ProtectedBranch, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

REF_CLASSES = {
    "feature branch": "refs/heads/feature",
    "default branch": "refs/heads/main",
    "protected branch": "refs/heads/release",
    "protected, force allowed": "refs/heads/wild",
    "tag": "refs/tags/v1",
    "own workspace": "refs/users/{me}/work",
    "other's workspace": "refs/users/bob/work",
    "other namespace": "refs/notes/commits",
}
OPS = ["create", "update", "force", "delete"]


def server_set(world, ref: str, sha: str | None) -> None:
    args = ["update-ref", "-d", ref] if sha is None else ["update-ref", ref, sha]
    subprocess.run(["git", "--git-dir", str(world.repo.disk_path), *args], check=True, capture_output=True)


@pytest.mark.parametrize("role", ["reader", "maintainer", "admin"])
def test_policy_matrix_with_real_pushes(world, role):
    # The matrix moves main onto workspace commits and back: a Celery worker left running by an
    # earlier test would clean up those "merged" workspace refs under it (workspaces.cleanup).
    # Branch pushes by readers are mapped to their workspace (tests/workspaces/test_branch_push.py):
    # off here, where the matrix is about the refs as pushed.
    WorkspaceSettings.objects.create(
        repository=world.repo, delete_merged_refs=False, branch_pushes_to_workspace=False
    )
    ProtectedBranch.objects.create(repository=world.repo, name="release")
    ProtectedBranch.objects.create(repository=world.repo, name="wild", allow_force=True)
    world.add("bob")
    me = world.add("carol", role if role != "reader" else None)  # a reader of a public repository
    base = world.base_sha
    child = me.commit("child of base")
    me.git("checkout", "--quiet", "--orphan", "unrelated", check=True)
    unrelated = me.commit("unrelated root", name="other.txt")
    mismatches = []
    for ref_class, template in REF_CLASSES.items():
        ref = template.format(me="carol")
        for op in OPS:
            server_set(world, ref, None if op == "create" else base)
            # --force everywhere, so the client never refuses on its own (tags): the server's
            # policy judges ancestry itself, and force does not change what is sent.
            # Others' workspaces are hidden from every push: git sends their updates as creations,
            # and a rewrite or a deletion needs -o force (tests/workspaces/test_branch_push.py).
            hidden = ref_class == "other's workspace"
            force = ["force"] if hidden else []
            if op in ("create", "update"):
                result = me.push("--force", f"{child}:{ref}")
                want = child
            elif op == "force":
                result = me.push("--force", f"{unrelated}:{ref}", options=force)
                want = unrelated
            else:
                result = me.push(f":{ref}", options=force)
                want = None
            after = world.refs().get(ref)
            allowed = expected(role, ref_class, op)
            ok = (
                (result.returncode == 0 and after == want)
                if allowed
                else (result.returncode != 0 and after == (None if op == "create" else base))
            )
            if not ok:
                mismatches.append((ref_class, op, allowed, result.returncode, result.stderr[-300:]))
            elif not allowed:
                assert "remote: hostsite: " in result.stderr, (ref_class, op, result.stderr)
    server_set(world, "refs/heads/main", base)
    assert mismatches == []


def advertised(world, pusher) -> set[str]:
    """The refs receive-pack advertises to this pusher, asked for the way git push does."""
    req = urllib.request.Request(
        f"http://{world.host}/{world.repo.full_name}.git/info/refs?service=git-receive-pack",
        headers={
            "Authorization": "Basic "
            + base64.b64encode(f"{pusher.username}:{pusher.token}".encode()).decode()
        },
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        body = resp.read().decode("latin-1")
    return {line.split("\0")[0].split(" ", 1)[1].strip() for line in body.split("\n") if " refs/" in line}


def test_what_each_pusher_is_advertised(world):
    alice = world.add("alice")
    bob = world.add("bob")
    maintainer = world.add("mona", "maintainer")
    for user in (alice, bob):
        user.commit(f"{user.username}'s work")
        assert user.push(f"HEAD:refs/users/{user.username}/topic").returncode == 0
    # Contributors' workspace refs are shown as branches too (to push to them, delete, force).
    assert advertised(world, alice) == {"refs/heads/main", "refs/heads/topic", "refs/users/alice/topic"}
    assert advertised(world, bob) == {"refs/heads/main", "refs/heads/topic", "refs/users/bob/topic"}
    # Maintainers see no other workspace either: their pushes stay small.
    assert advertised(world, maintainer) == {"refs/heads/main"}
    WorkspaceSettings.objects.create(repository=world.repo, branch_pushes_to_workspace=False)
    assert advertised(world, alice) == {"refs/heads/main", "refs/users/alice/topic"}


def test_maintainer_pushes_into_a_contributors_workspace(world):
    alice = world.add("alice")
    mona = world.add("mona", "maintainer")
    alice.commit("alice's work")
    assert alice.push("HEAD:refs/users/alice/topic").returncode == 0
    mona.git("fetch", "--quiet", mona.remote, "refs/users/alice/topic", check=True)
    mona.git("checkout", "--quiet", "FETCH_HEAD", check=True)
    fixed = mona.commit("maintainer's fix on top")
    result = mona.push("HEAD:refs/users/alice/topic")
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/topic"] == fixed
