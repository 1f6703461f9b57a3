"""Nameless push through proc-receive: refs/for/<branch>[/<topic>] lands in the workspace."""

import json
import urllib.request

import pytest

from repos.models import Push, RefUpdate
from reviews.models import Proposal, ProposalState
from tests.support.wait import wait_until
from workspaces.models import ArchivedRef

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def api_post(world, who, path: str, data: dict) -> dict:
    request = urllib.request.Request(
        f"http://{world.host}{path}",
        data=json.dumps(data).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {who.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_nameless_push_creates_then_advances(world):
    alice = world.add("alice")
    first = alice.commit("feature part 1")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    name = f"refs/users/alice/main-{first[:12]}"
    assert world.refs()[name] == first
    assert name in result.stdout  # git prints the ref the server chose
    # The push was recorded under the real ref.
    update = RefUpdate.objects.filter(push__repository=world.repo).latest("id")
    assert (update.ref, update.new) == (name, first)
    assert update.push.touches_workspace

    second = alice.commit("feature part 2")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs[name] == second  # advanced, not a second head
    assert [r for r in refs if r.startswith("refs/users/alice/")] == [name]


def test_unrelated_work_gets_a_new_head(world):
    alice = world.add("alice")
    one = alice.commit("one")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    alice.git("checkout", "--quiet", "-b", "other", world.base_sha, check=True)
    two = alice.commit("two", name="other.txt")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    refs = world.refs()
    assert refs[f"refs/users/alice/main-{one[:12]}"] == one
    assert refs[f"refs/users/alice/main-{two[:12]}"] == two


def test_topic_from_path_and_from_push_option(world):
    alice = world.add("alice")
    one = alice.commit("topic work")
    result = alice.push("HEAD:refs/for/main/fix-typo")
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/fix-typo"] == one
    two = alice.commit("more")
    result = alice.push("HEAD:refs/for/main", options=["topic=better-docs"])
    assert result.returncode == 0, result.stderr
    assert world.refs()["refs/users/alice/better-docs"] == two


def test_missing_target_branch_and_delete_are_refused(world):
    alice = world.add("alice")
    alice.commit("x")
    result = alice.push("HEAD:refs/for/no-such-branch")
    assert result.returncode != 0
    assert "no branch 'no-such-branch'" in result.stdout + result.stderr
    result = alice.push(":refs/for/main")
    assert result.returncode != 0
    assert "refs/for/main cannot be deleted" in result.stderr
    assert not [r for r in world.refs() if r.startswith("refs/users/alice/")]
    assert not Push.objects.filter(repository=world.repo, pusher=alice.user).exists()


def test_a_restored_merged_ref_never_takes_unrelated_work(world, celery_worker_process):
    """Merged, archived by cleanup, restored by its owner: the owner's next nameless push of
    other work (built on main, so it descends from the restored ref) gets a ref of its own,
    and the proposal it opens does not sit on the merged one's ref."""
    alice = world.add("alice")
    first = alice.commit("part one", name="one.txt")
    result = alice.push("HEAD:refs/for/main", options=["title=Part one"])
    assert result.returncode == 0, result.stderr
    merged_ref = f"refs/users/alice/main-{first[:12]}"
    merged = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo, source_ref=merged_ref).first(),
        timeout=10,
        what=lambda: f"a proposal from {merged_ref}; push said:\n{result.stderr}",
    )
    api_post(
        world,
        world.owner,
        f"/api/v1/repos/owner/project/proposals/{merged.number}/merge",
        {"strategy": "merge"},
    )
    row = wait_until(
        lambda: ArchivedRef.objects.filter(repository=world.repo, ref=merged_ref).first(),
        timeout=60,
        what=f"{merged_ref} archived after the merge",
    )
    assert row.how == "merged" and merged_ref not in world.refs()
    restored = api_post(
        world, alice, f"/api/v1/repos/owner/project/workspaces/alice/archived/{row.pk}/restore", {}
    )
    assert restored["ref"] == merged_ref and world.refs()[merged_ref] == first

    alice.git("fetch", "--quiet", "origin", "main", check=True)
    alice.git("checkout", "--quiet", "-B", "next", "FETCH_HEAD", check=True)
    assert alice.git("merge-base", "--is-ancestor", first, "HEAD").returncode == 0
    second = alice.commit("unrelated", name="two.txt")
    result = alice.push("HEAD:refs/for/main", options=["title=Part two"])
    assert result.returncode == 0, result.stderr
    fresh = f"refs/users/alice/main-{second[:12]}"
    assert f"landed in {fresh}" in result.stderr
    refs = world.refs()
    assert refs[merged_ref] == first and refs[fresh] == second
    opened = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo, title="Part two").first(),
        timeout=10,
        what="the proposal titled Part two",
    )
    assert opened.source_ref == fresh
    merged.refresh_from_db()
    assert merged.state == ProposalState.MERGED
    # Work on top of the new head advances it; the restored ref stays where it was.
    third = alice.commit("unrelated, continued", name="two.txt")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    refs = world.refs()
    assert refs[fresh] == third and refs[merged_ref] == first


def test_a_merged_head_is_not_advanced_while_cleanup_is_off(world):
    from workspaces.models import WorkspaceSettings

    WorkspaceSettings.objects.create(repository=world.repo, delete_merged_refs=False)
    alice = world.add("alice")
    first = alice.commit("landed")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    head = f"refs/users/alice/main-{first[:12]}"
    owner = world.owner
    owner.git("fetch", "--quiet", owner.remote, head, check=True)
    owner.git("merge", "--ff-only", "--quiet", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    # Pushing what main already has proposes nothing.
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode != 0 and "no new changes" in result.stdout + result.stderr
    second = alice.commit("on top of main")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs[head] == first and refs[f"refs/users/alice/main-{second[:12]}"] == second
    # A topic whose ref holds merged work is not reused for other work either.
    alice.git("checkout", "--quiet", "-b", "t", first, check=True)
    alice.commit("topic one", name="t.txt")
    assert alice.push("HEAD:refs/for/main/t1").returncode == 0
    tip = world.refs()["refs/users/alice/t1"]
    owner.git("fetch", "--quiet", owner.remote, "refs/users/alice/t1", check=True)
    owner.git("merge", "--no-ff", "--quiet", "-m", "t1", "FETCH_HEAD", check=True)
    assert owner.push("main").returncode == 0
    alice.git("fetch", "--quiet", "origin", "main", check=True)
    alice.git("checkout", "--quiet", "-B", "t", "FETCH_HEAD", check=True)
    alice.commit("topic two", name="t.txt")
    result = alice.push("HEAD:refs/for/main/t1")
    assert result.returncode != 0 and "holds work already on main" in result.stdout + result.stderr
    assert world.refs()["refs/users/alice/t1"] == tip


def test_heads_for_other_branches_and_topics_are_left_alone(world):
    world.owner.commit("release branch", name="r.txt")
    assert world.owner.push("HEAD:refs/heads/release").returncode == 0
    alice = world.add("alice")
    alice.git("fetch", "--quiet", "origin", check=True)
    alice.git("checkout", "--quiet", "-B", "w", "origin/release", check=True)
    one = alice.commit("for release")
    assert alice.push("HEAD:refs/for/release").returncode == 0
    assert alice.push("HEAD:refs/for/main/topic-a").returncode == 0
    two = alice.commit("more")
    # For main, without a topic: neither the release head nor the topic ref moves.
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs[f"refs/users/alice/release-{one[:12]}"] == one
    assert refs["refs/users/alice/topic-a"] == one
    assert refs[f"refs/users/alice/main-{two[:12]}"] == two
    # A directly pushed ref shaped like a nameless head is not one.
    three = alice.commit("direct")
    assert alice.push(f"HEAD:refs/users/alice/main-{three[:12]}").returncode == 0
    four = alice.commit("after direct")
    assert alice.push("HEAD:refs/for/main").returncode == 0
    refs = world.refs()
    assert refs[f"refs/users/alice/main-{two[:12]}"] == four  # the nameless head it builds on


def test_a_branch_push_and_a_nameless_push_of_main_never_collide(world):
    # The newcomer's day: commit on main, `git push origin main` (it lands in the workspace,
    # refs/users/alice/main), then a nameless push for main, then main again: each lands.
    alice = world.add("alice")
    first = alice.commit("on main")
    result = alice.push("main")
    assert result.returncode == 0, result.stderr
    second = alice.commit("more on main")
    result = alice.push("HEAD:refs/for/main")
    assert result.returncode == 0, result.stderr
    assert "cannot lock ref" not in result.stderr
    refs = world.refs()
    assert refs["refs/users/alice/main"] == first
    assert refs[f"refs/users/alice/main-{second[:12]}"] == second
    # The other order: a nameless head for main exists, and main is pushed again.
    third = alice.commit("still on main")
    result = alice.push("main")
    assert result.returncode == 0, result.stderr
    refs = world.refs()
    assert refs["refs/users/alice/main"] == third
    assert refs[f"refs/users/alice/main-{second[:12]}"] == second
