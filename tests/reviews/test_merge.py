"""Merging proposals with real git, every strategy, with and without conflicts."""

from __future__ import annotations

import pytest

from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import Push, PushCommit, RefUpdate, Webhook
from reviews import merge, services
from reviews.merge import MergeConflict, NotFastForward, TargetMoved
from reviews.models import ProposalState

pytestmark = pytest.mark.django_db


def propose(scene, ref="refs/users/alice/feature", **kwargs):
    return services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref=ref,
        target_branch="main",
        title=kwargs.pop("title", "Add feature"),
        description=kwargs.pop("description", "Why: because."),
        **kwargs,
    )


def diverge(scene, *, conflict: bool):
    """main gets one commit and alice's feature two, touching the same line if `conflict`."""
    scene.checkout("feature", "main")
    scene.commit("feature one", {"b.txt": "bee\n"}, author="Alice Author <alice@example.invalid>")
    scene.commit(
        "feature two",
        {"a.txt": "one\nTWO (alice)\nthree\n" if conflict else "one\ntwo\nthree\nfour\n"},
        author="Alice Author <alice@example.invalid>",
    )
    head = scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    scene.commit(
        "main moves", {"a.txt": "one\ntwo (main)\nthree\n" if conflict else "zero\none\ntwo\nthree\n"}
    )
    target = scene.publish("main")
    return head, target


def assert_untouched(scene, proposal, target):
    assert scene.tip("refs/heads/main") == target
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.OPEN and proposal.merge_push is None
    assert not Push.objects.filter(repository=scene.repo, protocol="web").exists()


def test_merge_commit_is_recorded_as_a_push(scene):
    head, target = diverge(scene, conflict=False)
    proposal = propose(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    new = scene.tip("refs/heads/main")
    assert result.sha == new and result.old == target
    assert scene.show(new, "%P") == f"{target} {head}"
    assert scene.show(new, "%cn <%ce>") == "Max Maintainer <max@example.invalid>"
    assert scene.show(new, "%an") == "Max Maintainer"
    assert scene.show(new, "%s") == "Merge proposal #1: Add feature"
    assert "Why: because." in scene.show(new, "%b")
    assert scene.file(new, "a.txt") == "zero\none\ntwo\nthree\nfour\n"
    assert scene.file(new, "b.txt") == "bee\n"

    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED and proposal.merged_by == scene.maint
    assert proposal.merge_strategy == "merge" and proposal.merged_sha == new and proposal.merged_at
    push = proposal.merge_push
    assert push.pk == result.push_id and push.protocol == "web" and push.pusher == scene.maint
    assert [(u.ref, u.old, u.new) for u in RefUpdate.objects.filter(push=push)] == [
        ("refs/heads/main", target, new)
    ]
    # The feature's commits were only in a workspace ref until now; the merge brought them in.
    shas = list(PushCommit.objects.filter(push=push).values_list("sha", flat=True))
    assert shas[-1] == new and head in shas


def test_merge_enqueues_webhooks_and_push_signal(scene, enqueued, django_capture_on_commit_callbacks):
    from repos.signals import push_recorded

    Webhook.objects.create(repository=scene.repo, url="https://example.invalid/hook", secret="s")
    signalled = []

    def receiver(sender, push_id, repository_id, **kwargs):
        signalled.append(push_id)

    push_recorded.connect(receiver)
    try:
        diverge(scene, conflict=False)
        proposal = propose(scene)
        with django_capture_on_commit_callbacks(execute=True):
            result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    finally:
        push_recorded.disconnect(receiver)
    assert ("repos.tasks.fan_out_webhooks", (result.push_id,)) in enqueued
    assert signalled == [result.push_id]


def test_fast_forward_only(scene):
    scene.checkout("feature", "main")
    head = scene.commit("feature", {"b.txt": "bee\n"})
    scene.publish("feature", "refs/users/alice/feature")
    proposal = propose(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="ff")
    assert result.sha == head == scene.tip("refs/heads/main")
    assert Push.objects.get(pk=result.push_id).ref_updates.get().new == head


def test_fast_forward_refused_when_target_moved(scene):
    _head, target = diverge(scene, conflict=False)
    proposal = propose(scene)
    with pytest.raises(NotFastForward) as caught:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="ff")
    assert caught.value.status == 409
    assert_untouched(scene, proposal, target)


def test_rebase_keeps_authors_and_messages(scene):
    head, target = diverge(scene, conflict=False)
    proposal = propose(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="rebase")
    new = result.sha
    assert scene.show(f"{new}~2", "%H") == target  # two commits replayed on the target
    for rev, original in ((new, head), (f"{new}~1", f"{head}~1")):
        assert scene.show(rev, "%an <%ae> %at %B") == scene.show(original, "%an <%ae> %at %B")
        assert scene.show(rev, "%cn <%ce>") == "Max Maintainer <max@example.invalid>"
    assert scene.file(new, "a.txt") == "zero\none\ntwo\nthree\nfour\n"
    assert scene.file(new, "b.txt") == "bee\n"


def test_rebase_follows_renames(scene):
    """Replayed with merge-tree (ort): a file renamed on one side and edited on the other merges."""
    scene.checkout("feature", "main")
    scene.git("mv", "a.txt", "renamed.txt")
    scene.commit("rename a.txt")
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    target = scene.commit("edit a.txt", {"a.txt": "one\ntwo\nthree\nfour\n"})
    scene.publish("main")
    proposal = propose(scene)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="rebase")
    assert scene.show(f"{result.sha}~1", "%H") == target
    assert scene.file(result.sha, "renamed.txt") == "one\ntwo\nthree\nfour\n"


def test_rebase_drops_changes_already_upstream(scene):
    scene.checkout("feature", "main")
    scene.commit("same change", {"b.txt": "bee\n"})
    scene.commit("own change", {"c.txt": "sea\n"})
    scene.publish("feature", "refs/users/alice/feature")
    scene.checkout("main")
    target = scene.commit("same change upstream", {"b.txt": "bee\n"})
    scene.publish("main")
    result = merge.proposal_merge(proposal=propose(scene), user=scene.maint, strategy="rebase")
    assert scene.show(f"{result.sha}~1", "%H") == target
    assert scene.show(result.sha, "%s") == "own change"


def test_squash_one_commit_by_the_proposal_author(scene):
    _head, target = diverge(scene, conflict=False)
    proposal = propose(scene, description="Longer text.")
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="squash")
    new = result.sha
    assert scene.show(new, "%P") == target
    assert scene.show(new, "%an") == "Alice Author"
    assert scene.show(new, "%cn") == "Max Maintainer"
    message = scene.show(new, "%B")
    assert message.startswith("Add feature\n\nLonger text.\n\nSquashed commits (proposal #1):\n")
    assert "* feature one\n* feature two" in message
    assert scene.file(new, "a.txt") == "zero\none\ntwo\nthree\nfour\n"


@pytest.mark.parametrize("strategy", ["merge", "rebase", "squash"])
def test_conflicts_name_the_files_and_change_nothing(scene, strategy):
    _head, target = diverge(scene, conflict=True)
    proposal = propose(scene)
    with pytest.raises(MergeConflict) as caught:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy=strategy)
    assert caught.value.files == ["a.txt"]
    assert caught.value.status == 409 and "a.txt" in caught.value.message
    assert_untouched(scene, proposal, target)


def test_target_moved_between_compute_and_swap_is_recomputed_once(scene, monkeypatch):
    diverge(scene, conflict=False)
    proposal = propose(scene)
    pushed = []

    def concurrent_push(repo, ref, old, new):
        if not pushed:
            scene.checkout("main")
            scene.commit("pushed meanwhile", {"d.txt": "dee\n"})
            pushed.append(scene.publish("main"))

    monkeypatch.setattr(merge, "before_swap", concurrent_push)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    assert result.old == pushed[0]
    assert scene.show(result.sha, "%P").split()[0] == pushed[0]  # the push is kept under the merge


def test_target_moving_again_fails_and_keeps_the_push(scene, monkeypatch):
    diverge(scene, conflict=False)
    proposal = propose(scene)
    pushed = []

    def always_push(repo, ref, old, new):
        scene.checkout("main")
        scene.commit(f"pushed meanwhile {len(pushed)}", {"d.txt": f"{len(pushed)}\n"})
        pushed.append(scene.publish("main"))

    monkeypatch.setattr(merge, "before_swap", always_push)
    with pytest.raises(TargetMoved) as caught:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="squash")
    assert caught.value.status == 409 and "try again" in caught.value.message
    assert len(pushed) == 2
    assert_untouched(scene, proposal, pushed[-1])


def test_only_maintainers_merge(scene):
    _head, target = diverge(scene, conflict=False)
    proposal = propose(scene)
    for user in (scene.alice, scene.bob):
        with pytest.raises(Forbidden):
            merge.proposal_merge(proposal=proposal, user=user, strategy="merge")
    with pytest.raises(InvalidInput):
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="octopus")
    assert_untouched(scene, proposal, target)


def test_protected_branch_takes_fast_forward_merges(scene):
    from workspaces.services import protected_branch_set

    protected_branch_set(repo=scene.repo, name="main")
    diverge(scene, conflict=False)
    result = merge.proposal_merge(proposal=propose(scene), user=scene.maint, strategy="rebase")
    assert scene.tip("refs/heads/main") == result.sha


def test_rebase_refuses_merge_commits_and_nothing_to_merge_is_a_conflict(scene):
    from reviews.merge import NothingToMerge

    diverge(scene, conflict=False)
    scene.checkout("feature")
    scene.git("merge", "--quiet", "--no-edit", "main")  # the contributor merged main in
    scene.publish("feature", "refs/users/alice/feature")
    proposal = propose(scene)
    target = scene.tip("refs/heads/main")
    with pytest.raises(Conflict) as caught:
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="rebase")
    assert caught.value.code == "rebase_merge_commit" and caught.value.status == 409
    assert_untouched(scene, proposal, target)
    result = merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="ff")  # it contains main now
    assert result.sha == scene.tip("refs/users/alice/feature")

    scene.checkout("again", "main")
    scene.commit("second feature", {"e.txt": "e\n"})
    scene.publish("again", "refs/users/alice/again")
    second = propose(scene, ref="refs/users/alice/again")
    scene.checkout("main")
    scene.git("reset", "--quiet", "--hard", "again")  # the same commit reaches main by a push
    scene.publish("main")
    with pytest.raises(NothingToMerge):
        merge.proposal_merge(proposal=second, user=scene.maint, strategy="squash")


def test_a_maintainer_banned_from_the_repository_cannot_merge(scene):
    from workspaces.models import RepositoryBan

    _head, target = diverge(scene, conflict=False)
    proposal = propose(scene)
    RepositoryBan.objects.create(repository=scene.repo, user=scene.maint)
    assert not merge.may_merge(scene.maint, scene.repo)  # no merge box either
    with pytest.raises(Forbidden):
        merge.proposal_merge(proposal=proposal, user=scene.maint, strategy="merge")
    assert_untouched(scene, proposal, target)
