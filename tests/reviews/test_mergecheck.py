"""Merge checks: computed per (target tip, proposal tip) by the task after pushes, cached, shown
before the button; a page with a stale pair says "checking" and enqueues the task."""

from __future__ import annotations

import pytest
from django.test import Client

from repos.pushes import Update, push_record
from reviews import events, mergecheck, services, tasks
from reviews.models import MergeCheck

pytestmark = pytest.mark.django_db


def open_feature(scene, files, ref="refs/users/alice/feature", branch="feature"):
    scene.checkout(branch, "main")
    scene.commit(f"{branch} work", files)
    scene.publish(branch, ref)
    scene.checkout("main")
    return services.proposal_open(
        repo=scene.repo, user=scene.alice, source_ref=ref, target_branch="main", title=branch
    )


def move_main(scene, files):
    scene.checkout("main")
    old = scene.tip("refs/heads/main")
    scene.commit("main moves", files)
    return old, scene.publish("main")


def test_clean_then_conflicting_after_the_target_moves(scene, monkeypatch):
    told = []
    monkeypatch.setattr(events, "conflict_appeared", lambda proposal, *, files: told.append(files))
    proposal = open_feature(scene, {"a.txt": "one\nTWO\nthree\n"})
    check = mergecheck.check_proposal(proposal)
    assert (check.state, check.behind, check.conflicts) == ("clean", 0, [])
    assert check.head_sha == proposal.revisions.get().head_sha
    _old, target = move_main(scene, {"a.txt": "one\n2\nthree\n", "new.txt": "n\n"})
    assert mergecheck.cached(proposal, mergecheck.current_pair(proposal)) is None  # stale pair
    assert tasks.check_merges(scene.repo.pk, "main") == "1 checked"
    check = MergeCheck.objects.get(proposal=proposal)
    assert (check.state, check.conflicts, check.behind, check.target_sha) == (
        "conflicts",
        ["a.txt"],
        1,
        target,
    )
    assert told == [["a.txt"]]
    # Idempotent: the same pair is not computed (nor told) again.
    tasks.check_merges(scene.repo.pk, "main")
    assert told == [["a.txt"]] and MergeCheck.objects.get(proposal=proposal).computed_at == check.computed_at


def test_behind_but_clean(scene):
    proposal = open_feature(scene, {"b.txt": "b\n"})
    move_main(scene, {"c.txt": "c\n"})
    move_main(scene, {"d.txt": "d\n"})
    check = mergecheck.check_proposal(proposal)
    assert (check.state, check.behind) == ("clean", 2)


def test_a_push_to_the_target_enqueues_the_check(scene, enqueued, django_capture_on_commit_callbacks):
    proposal = open_feature(scene, {"b.txt": "b\n"})
    old, new = move_main(scene, {"c.txt": "c\n"})
    with django_capture_on_commit_callbacks(execute=True):
        push_record(repo=scene.repo, pusher=scene.maint, updates=[Update(old, new, "refs/heads/main")])
    assert ("reviews.tasks.check_merges", (scene.repo.pk, "main")) in enqueued
    # A new revision enqueues the per-revision task (owners, check, auto-merge).
    scene.checkout("feature")
    scene.commit("more", {"e.txt": "e\n"})
    head = scene.publish("feature", "refs/users/alice/feature")
    with django_capture_on_commit_callbacks(execute=True):
        revision = services.revision_record(proposal=proposal, head=head)
    assert ("reviews.tasks.proposal_revised", (revision.pk,)) in enqueued


def test_the_page_shows_each_state(scene, enqueued, django_capture_on_commit_callbacks):
    proposal = open_feature(scene, {"a.txt": "one\nTWO\nthree\n"})
    client = Client()
    client.force_login(scene.maint)
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get("/owner/project/proposals/1").content.decode()
    assert 'id="merge-checking"' in page  # nothing computed: the page runs no merge, it asks
    assert ("reviews.tasks.check_merge", (proposal.pk,)) in enqueued
    assert tasks.check_merge(proposal.pk) == "clean"
    page = client.get("/owner/project/proposals/1").content.decode()
    assert 'id="merge-clean"' in page and "behind" not in page
    move_main(scene, {"a.txt": "one\n<b>2</b>\nthree\n"})
    mergecheck.check_proposal(proposal)
    page = client.get("/owner/project/proposals/1").content.decode()
    assert 'id="merge-conflicts"' in page and "<code>a.txt</code>" in page and "in 1 file:" in page


def test_one_task_checks_every_proposal_of_the_target(scene):
    first = open_feature(scene, {"b.txt": "b\n"}, "refs/users/alice/one", "one")
    second = open_feature(scene, {"a.txt": "one\nTWO\nthree\n"}, "refs/users/alice/two", "two")
    move_main(scene, {"a.txt": "one\n2\nthree\n"})
    tasks.check_merges(scene.repo.pk, "main")
    states = dict(MergeCheck.objects.values_list("proposal_id", "state"))
    assert states == {first.pk: "clean", second.pk: "conflicts"}


def test_unrelated_histories_are_an_error_not_a_crash(scene):
    proposal = open_feature(scene, {"b.txt": "b\n"})
    scene.git("checkout", "--quiet", "--orphan", "lonely")
    scene.commit("alone", {"z.txt": "z\n"})
    lonely = scene.publish("lonely")
    check = mergecheck.check_proposal(proposal, mergecheck.Pair(lonely, proposal.revisions.get().head_sha))
    assert check.state == "error" and "nothing in common" in check.detail
