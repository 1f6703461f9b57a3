"""Proposals against the live server: push options open them, pushes add revisions, and a
push that lands while a merge is being computed is kept. Proposals follow a push in a task
(reviews.tasks), which the worker lent to each test runs."""

from __future__ import annotations

import re
import subprocess

import pytest

from repos.models import Push
from reviews import merge
from reviews.models import Proposal, ProposalState
from tests.support.wait import wait_until

pytestmark = [
    pytest.mark.live,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker_process"),
]


def followed(worker) -> int:
    """How many pushes the worker's proposals task has finished with."""
    return len(re.findall(r"Task reviews\.tasks\.follow_push\[[^\]]+\] succeeded", worker.log(limit=None)))


def test_push_options_open_a_proposal_and_later_pushes_add_revisions(world):
    alice = world.add("alice")
    first = alice.commit("feature part 1")
    result = alice.push(
        "HEAD:refs/for/main",
        options=[
            "title=Part one",
            r"description=Does one thing.\nWell.",
            "hostsite.for=refs/users/alice/forged main",
        ],
    )
    assert result.returncode == 0, result.stderr
    assert "/owner/project/proposals" in result.stderr  # post-receive tells where to look
    ref = f"refs/users/alice/main-{first[:12]}"
    proposal = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo).first(),
        timeout=10,
        what=lambda: f"a proposal; push said:\n{result.stderr}",
    )
    assert (proposal.number, proposal.source_ref, proposal.target_branch, proposal.author.username) == (
        1,
        ref,
        "main",
        "alice",
    )
    assert (proposal.title, proposal.description) == ("Part one", "Does one thing.\nWell.")
    push = Push.objects.filter(repository=world.repo).latest("id")
    assert f"hostsite.for={ref} main" in push.push_options  # written by proc-receive
    assert "hostsite.for=refs/users/alice/forged main" not in push.push_options  # a client cannot
    assert list(proposal.revisions.values_list("number", "head_sha")) == [(1, first)]

    second = alice.commit("feature part 2")
    result = alice.push("HEAD:refs/for/main", options=["title=Parts one and two"])
    assert result.returncode == 0, result.stderr
    # The task records the revision, then retitles (one transaction each): wait for both.
    wait_until(
        lambda: (
            proposal.revisions.count() == 2
            and Proposal.objects.filter(pk=proposal.pk, title="Parts one and two").exists()
        ),
        timeout=30,
        what="the proposal's second revision and its new title",
    )
    proposal.refresh_from_db()
    assert proposal.title == "Parts one and two" and proposal.description == "Does one thing.\nWell."
    assert proposal.revisions.order_by("-number").first().head_sha == second
    assert Proposal.objects.count() == 1


def test_topic_push_to_another_branch_and_hostile_options(world):
    world.owner.commit("release branch")
    assert world.owner.push("HEAD:refs/heads/release").returncode == 0
    alice = world.add("alice")
    alice.git("checkout", "--quiet", "-b", "topic", "origin/release", check=True)
    alice.commit("for the release", name="r.txt")
    huge = "T" * 5000
    result = alice.push(
        "HEAD:refs/for/release/my-topic", options=[f"title={huge}\u202e", "description=\x1b[31mred"]
    )
    assert result.returncode == 0, result.stderr
    proposal = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo).first(), timeout=10, what="a proposal"
    )
    assert (proposal.source_ref, proposal.target_branch) == ("refs/users/alice/my-topic", "release")
    assert proposal.title == "T" * 200
    assert proposal.description == "[31mred"


def test_push_without_title_opens_nothing(world, celery_worker_process):
    alice = world.add("alice")
    alice.commit("quiet work")
    before = followed(celery_worker_process)
    result = alice.push("HEAD:refs/for/main", options=["topic=quiet"])
    assert result.returncode == 0, result.stderr
    wait_until(
        lambda: followed(celery_worker_process) > before, timeout=30, what="the worker following the push"
    )
    assert not Proposal.objects.exists()


def test_a_push_landing_during_a_merge_is_kept(world, monkeypatch):
    alice = world.add("alice")
    maint = world.add("maint", "maintainer")
    alice.commit("alice's change", name="alice.txt")
    assert alice.push("HEAD:refs/for/main", options=["title=Alice"]).returncode == 0
    proposal = wait_until(
        lambda: Proposal.objects.filter(repository=world.repo).first(), timeout=10, what="alice's proposal"
    )
    pushed = []

    def concurrent_push(repo, ref, old, new):
        if not pushed:
            owner = world.owner
            pushed.append(owner.commit("pushed during the merge", name="owner.txt"))
            result = owner.push("main")
            assert result.returncode == 0, result.stderr

    monkeypatch.setattr(merge, "before_swap", concurrent_push)
    result = merge.proposal_merge(proposal=proposal, user=maint.user, strategy="rebase")
    tip = world.refs()["refs/heads/main"]
    assert tip == result.sha and result.old == pushed[0]
    # The pushed commit is under the merge: recomputed on top of it, not overwritten.
    check = subprocess.run(
        ["git", "--git-dir", str(world.repo.disk_path), "merge-base", "--is-ancestor", pushed[0], tip],
        check=False,
    )
    assert check.returncode == 0
    proposal.refresh_from_db()
    assert proposal.state == ProposalState.MERGED
    pushes = list(
        Push.objects.filter(repository=world.repo).order_by("id").values_list("protocol", "pusher_name")
    )
    assert pushes[-2:] == [("http", "owner"), ("web", "maint")]
