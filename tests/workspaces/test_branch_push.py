"""`git push origin my-fix` by a contributor lands in their workspace (proc-receive), with real git
against the live server; maintainers' branch pushes still update branches, and their writes to
others' (hidden) workspaces are judged against the ref's tip."""

from __future__ import annotations

import pytest

from repos.models import RefUpdate
from tests.workspaces.test_policy_live import advertised
from workspaces.models import RepositoryBan, Workspace, WorkspaceSettings

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def push(who, *args):
    """git push as a person types it (not --porcelain): git's own lines, on stderr."""
    return who.git("push", who.remote, *args)


def test_contributor_branch_push_lifecycle(world):
    alice = world.add("alice")
    alice.git("checkout", "--quiet", "-b", "my-fix", check=True)
    first = alice.commit("fix, part 1")
    result = push(alice, "my-fix")
    assert result.returncode == 0, result.stderr
    assert "* [new reference]   my-fix -> refs/users/alice/my-fix" in result.stderr
    refs = world.refs()
    assert refs["refs/users/alice/my-fix"] == first and "refs/heads/my-fix" not in refs
    # The pushlog has the workspace ref, as post-receive was told it: followers see that name.
    update = RefUpdate.objects.filter(push__repository=world.repo).latest("id")
    assert (update.ref, update.new) == ("refs/users/alice/my-fix", first)

    second = alice.commit("fix, part 2")
    result = push(alice, "my-fix")
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/my-fix"] == second

    # A rewrite: git's own fast-forward check refuses it (it was shown the ref as a branch)...
    alice.git("reset", "--quiet", "--hard", first, check=True)
    rewritten = alice.commit("fix, rewritten", name="other.txt")
    result = push(alice, "my-fix")
    assert result.returncode != 0 and "non-fast-forward" in result.stderr
    assert world.refs()["refs/users/alice/my-fix"] == second
    # ...and --force passes it.
    result = push(alice, "--force", "my-fix")
    assert result.returncode == 0, result.stderr
    assert "+ " in result.stderr and "(forced update)" in result.stderr
    assert world.refs()["refs/users/alice/my-fix"] == rewritten
    assert RefUpdate.objects.filter(push__repository=world.repo).latest("id").forced

    result = push(alice, ":my-fix")
    assert result.returncode == 0, result.stderr
    assert "refs/users/alice/my-fix" not in world.refs()

    # The tutorial's first push of a new branch.
    alice.git("checkout", "--quiet", "-b", "tutorial", check=True)
    third = alice.commit("tutorial work")
    result = push(alice, "-u", "HEAD")
    assert result.returncode == 0, result.stderr
    assert "HEAD -> refs/users/alice/tutorial" in result.stderr
    assert world.refs()["refs/users/alice/tutorial"] == third
    assert world.refs()["refs/heads/main"] == world.base_sha


def test_contributor_refusals(world):
    alice = world.add("alice")
    alice.commit("work")
    result = push(alice, "HEAD:refs/tags/v1")
    assert result.returncode != 0
    assert "remote: hostsite: you need write access to push tags (refs/tags/v1)" in result.stderr
    assert "git push origin HEAD:refs/users/alice/v1" in result.stderr

    WorkspaceSettings.objects.create(repository=world.repo, ref_limit=2)
    assert push(alice, "HEAD:one", "HEAD:two").returncode == 0
    result = push(alice, "HEAD:three")
    assert result.returncode != 0 and "already holds 2 refs, the limit" in result.stderr
    # An update of an existing one is no creation.
    alice.commit("more")
    assert push(alice, "HEAD:one").returncode == 0

    Workspace.objects.update_or_create(repository=world.repo, user=alice.user, defaults={"frozen": True})
    result = push(alice, "HEAD:two")
    assert result.returncode != 0 and "frozen by a moderator" in result.stderr
    Workspace.objects.filter(repository=world.repo, user=alice.user).update(frozen=False)
    RepositoryBan.objects.create(repository=world.repo, user=alice.user, reason="spam")
    result = push(alice, "HEAD:two")
    assert result.returncode != 0 and "banned from pushing" in result.stderr
    RepositoryBan.objects.all().delete()

    WorkspaceSettings.objects.filter(repository=world.repo).update(branch_pushes_to_workspace=False)
    result = push(alice, "HEAD:four")
    assert result.returncode != 0
    assert "remote: hostsite: you need write access to push to refs/heads/four; push to your workspace" in (
        result.stderr
    )
    refs = world.refs()
    assert not [ref for ref in refs if ref.startswith("refs/heads/") and ref != "refs/heads/main"]
    assert "refs/tags/v1" not in refs and "refs/users/alice/three" not in refs


def test_maintainers_push_branches_and_judge_others_workspaces_by_tip(world):
    alice = world.add("alice")
    mona = world.add("mona", "maintainer")
    tip = alice.commit("alice's work")
    assert push(alice, "HEAD:topic").returncode == 0
    assert world.refs()["refs/users/alice/topic"] == tip

    fix = mona.commit("maintainer's branch")
    result = push(mona, "HEAD:feature")
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/heads/feature"] == fix and "refs/users/mona/feature" not in world.refs()
    # Only canonical refs and their own workspace: no other workspace in a maintainer's push.
    assert advertised(world, mona) == {"refs/heads/main", "refs/heads/feature"}

    mona.git("fetch", "--quiet", mona.remote, "refs/users/alice/topic", check=True)
    mona.git("checkout", "--quiet", "FETCH_HEAD", check=True)
    on_top = mona.commit("a fix on top of alice's work")
    result = push(mona, "HEAD:refs/users/alice/topic")
    assert result.returncode == 0, result.stderr  # a fast-forward from the tip
    assert world.refs()["refs/users/alice/topic"] == on_top

    mona.git("checkout", "--quiet", world.base_sha, check=True)
    other = mona.commit("something else", name="else.txt")
    result = push(mona, "--force", "HEAD:refs/users/alice/topic")
    assert result.returncode != 0
    assert f"refs/users/alice/topic is at {on_top[:12]}" in result.stderr
    assert f"git push -o force origin {other}:refs/users/alice/topic" in result.stderr
    assert world.refs()["refs/users/alice/topic"] == on_top
    result = push(mona, "-o", "force-push", "HEAD:refs/users/alice/topic")  # Gitea's spelling
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/topic"] == other

    result = push(mona, ":refs/users/alice/topic")
    assert result.returncode != 0 and "git push -o force origin :refs/users/alice/topic" in result.stderr
    assert push(mona, "-o", "force", ":refs/users/alice/topic").returncode == 0
    assert "refs/users/alice/topic" not in world.refs()


def test_atomic_mixed_pushes(world):
    alice = world.add("alice")
    alice.commit("work")
    assert push(alice, "HEAD:refs/users/alice/x").returncode == 0
    # refs/users/alice/x/y cannot exist beside refs/users/alice/x: git accepts the push, the
    # transaction fails. Atomic: the mapped branch does not land either.
    result = push(alice, "--atomic", "HEAD:mapped", "HEAD:refs/users/alice/x/y")
    assert result.returncode != 0 and "atomic transaction failed" in result.stderr
    assert {r for r in world.refs() if r.startswith("refs/users/alice/")} == {"refs/users/alice/x"}
    # Not atomic: per ref, as git does.
    result = push(alice, "HEAD:mapped", "HEAD:refs/users/alice/x/y")
    assert result.returncode != 0
    assert {r for r in world.refs() if r.startswith("refs/users/alice/")} == {
        "refs/users/alice/x",
        "refs/users/alice/mapped",
    }
    # A refusal by the hook fails the whole atomic push too, and a success lands it all.
    alice.git("checkout", "--quiet", world.base_sha, check=True)
    other = alice.commit("unrelated", name="u.txt")
    result = push(alice, "--atomic", f"{other}:refs/heads/mapped", "HEAD:refs/users/alice/z")
    assert result.returncode != 0  # git's own fast-forward check (it was shown the branch)
    result = push(alice, "--atomic", "HEAD:refs/heads/second", "HEAD:refs/users/alice/z")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs["refs/users/alice/second"] == refs["refs/users/alice/z"] == other

    mona = world.add("mona", "maintainer")
    mine = mona.commit("maintainer's work")
    result = push(mona, "--atomic", "HEAD:release", f"{mine}:refs/users/alice/z")
    assert result.returncode != 0 and "was refused" in result.stderr  # not a fast-forward of z
    assert "refs/heads/release" not in world.refs()
    result = push(mona, "--atomic", "-o", "force", "HEAD:release", f"{mine}:refs/users/alice/z")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs["refs/heads/release"] == refs["refs/users/alice/z"] == mine


def test_atomic_push_with_a_hidden_workspace_lands_nothing(world):
    """git refuses updates of hidden refs before proc-receive runs, and an atomic push would go
    on with the rest: the hook refuses them instead, so that nothing lands."""
    bob = world.add("bob")
    mona = world.add("mona", "maintainer")
    Workspace.objects.update_or_create(repository=world.repo, user=bob.user, defaults={"hidden": True})
    mona.commit("maintainer's work")
    result = push(mona, "--atomic", "HEAD:refs/heads/mix", "HEAD:refs/users/bob/x")
    assert result.returncode != 0 and "deny updating a hidden ref" in result.stderr
    refs = world.refs()
    assert "refs/heads/mix" not in refs and "refs/users/bob/x" not in refs
    # Not atomic: git refuses the hidden one, and the branch lands.
    result = push(mona, "HEAD:refs/heads/mix", "HEAD:refs/users/bob/x")
    assert result.returncode != 0 and "deny updating a hidden ref" in result.stderr
    assert "refs/heads/mix" in world.refs() and "refs/users/bob/x" not in world.refs()


def test_without_aliases_the_hook_still_compares_and_swaps(world):
    """Where git writes the push advertisement itself (a repository with alternates), the
    workspace refs are not shown as branches: the client sends old=0 for them."""
    alice = world.add("alice")
    first = alice.commit("one")
    assert push(alice, "HEAD:my-fix").returncode == 0
    (world.repo.disk_path / "objects" / "info" / "alternates").write_text("")
    assert "refs/heads/my-fix" not in advertised(world, alice)
    second = alice.commit("two")
    result = push(alice, "HEAD:my-fix")
    assert result.returncode == 0, result.stderr  # a fast-forward from the tip
    assert world.refs()["refs/users/alice/my-fix"] == second
    alice.git("reset", "--quiet", "--hard", first, check=True)
    third = alice.commit("rewrite", name="r.txt")
    result = push(alice, "--force", "HEAD:my-fix")
    assert result.returncode != 0
    assert f"refs/users/alice/my-fix is at {second[:12]}" in result.stderr
    assert world.refs()["refs/users/alice/my-fix"] == second
    assert push(alice, "-o", "force", "HEAD:my-fix").returncode == 0
    assert world.refs()["refs/users/alice/my-fix"] == third
