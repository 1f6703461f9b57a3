"""Line-comment threads: who may open, reply and resolve, hostile input, and carrying threads to
later revisions (following moved lines, going outdated, across a rebase and a rename)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from repos.errors import Forbidden, InvalidInput, NotFound
from repos.models import Visibility
from reviews import selectors
from reviews.models import COMMENT_MAX, Comment, Thread
from reviews.threads import carry, gitfiles
from reviews.threads import services as threads
from tests.factories import UserFactory
from tests.reviews.threads_util import TEN, comment, numbered, propose, revise

pytestmark = pytest.mark.django_db


def position(scene, proposal, thread, revision=None, diff_renames=None):
    revision = revision or selectors.latest_revision(proposal)
    thread = Thread.objects.select_related("revision").get(pk=thread.pk)
    return carry.positions(scene.repo.disk_path, [thread], revision, diff_renames)[thread.pk]


def test_a_thread_quotes_its_lines_and_takes_replies(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal, line_start=5, line_end=6, body="Two lines")
    assert (thread.path, thread.side, thread.line_start, thread.line_end) == ("code.txt", "new", 5, 6)
    assert thread.context == [[n, f"line {n}"] for n in range(2, 10)]  # 3 around
    assert thread.revision == selectors.latest_revision(proposal)
    reply = threads.thread_reply(thread=thread, user=scene.alice, body="Because.")
    assert [c.body for c in thread.comments.all()] == ["Two lines", "Because."]
    assert (reply.author, reply.thread, reply.proposal) == (scene.alice, thread, proposal)
    edge = comment(scene, proposal, line_start=1, line_end=1)
    assert [n for n, _ in edge.context] == [1, 2, 3, 4]


def test_old_side_lines_are_the_base_files(scene):
    proposal = propose(scene, files={"a.txt": "one\nTWO\nthree\n"})
    thread = comment(scene, proposal, path="a.txt", side="old", line_start=2)
    assert thread.context[1] == [2, "two"]  # as before the change
    with pytest.raises(NotFound):
        comment(scene, proposal, side="old")  # code.txt is added: no old side


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"line_start": 0}, InvalidInput),
        ({"line_start": -3}, InvalidInput),
        ({"line_start": 5, "line_end": 4}, InvalidInput),
        ({"line_start": 11}, InvalidInput),  # past the end of the file
        ({"line_start": 1, "line_end": 501}, InvalidInput),
        ({"line_start": "two"}, InvalidInput),
        ({"line_start": None}, InvalidInput),
        ({"path": "nope.txt"}, NotFound),
        ({"path": ""}, InvalidInput),
        ({"path": "../code.txt"}, InvalidInput),
        ({"path": "./code.txt"}, InvalidInput),
        ({"path": "/code.txt"}, InvalidInput),
        ({"path": "code.txt\0"}, InvalidInput),
        ({"path": "code.txt\nmain:a.txt"}, InvalidInput),
        ({"path": "x" * 5000}, InvalidInput),
        ({"path": "dir"}, NotFound),  # a directory is no file
        ({"side": "both"}, InvalidInput),
        ({"body": ""}, InvalidInput),
        ({"body": " \x00\x01 "}, InvalidInput),
        ({"body": "x" * (COMMENT_MAX + 1)}, InvalidInput),
        ({"path": "blob.bin"}, InvalidInput),  # binary
        ({"side": "old", "path": "a.txt", "body": "```suggestion\nx\n```"}, InvalidInput),
    ],
)
def test_bad_anchors_and_bodies_are_refused_and_nothing_is_written(scene, changes, error):
    proposal = propose(scene, files={"blob.bin": "\0\1\2 binary\n", "dir/inner.txt": "x\n"})
    with pytest.raises(error) as raised:
        comment(scene, proposal, **changes)
    assert raised.value.message
    assert not Thread.objects.exists() and not Comment.objects.exists()


def test_an_anchor_into_another_proposals_revision_is_refused(scene):
    first = propose(scene)
    scene.checkout("other", "main")
    scene.commit("other", {"other.txt": "o\n"})
    scene.publish("other", "refs/users/alice/other")
    scene.checkout("main")
    from reviews import services

    second = services.proposal_open(
        repo=scene.repo,
        user=scene.alice,
        source_ref="refs/users/alice/other",
        target_branch="main",
        title="O",
    )
    with pytest.raises(NotFound):
        comment(scene, second, revision=selectors.latest_revision(first))
    assert not Thread.objects.exists()


def test_who_may_comment_and_resolve(scene):
    proposal = propose(scene)
    with pytest.raises(Forbidden):
        comment(scene, proposal, user=AnonymousUser())
    thread = comment(scene, proposal, user=scene.bob)
    stranger = UserFactory(username="stranger")
    with pytest.raises(Forbidden):  # may read (public), took no part
        threads.thread_resolve(thread=thread, user=stranger, resolved=True)
    threads.thread_reply(thread=thread, user=stranger, body="me too")
    threads.thread_resolve(thread=thread, user=stranger, resolved=True)  # now a participant
    thread.refresh_from_db()
    assert thread.resolved and thread.resolved_by == stranger
    for user in (scene.alice, scene.maint, scene.bob):  # author, maintainer, the thread's opener
        threads.thread_resolve(thread=thread, user=user, resolved=False)
        threads.thread_resolve(thread=thread, user=user, resolved=True)
    threads.thread_resolve(thread=thread, user=scene.maint, resolved=False)
    thread.refresh_from_db()
    assert not thread.resolved and thread.resolved_by is None


def test_a_private_repository_is_not_found_to_outsiders(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal)
    scene.repo.visibility = Visibility.PRIVATE
    scene.repo.save()
    outsider = UserFactory(username="outsider")
    with pytest.raises(NotFound):
        comment(scene, proposal, user=outsider)
    with pytest.raises(NotFound):
        threads.thread_reply(thread=thread, user=outsider, body="hi")
    with pytest.raises(NotFound):
        threads.thread_resolve(thread=thread, user=outsider, resolved=True)
    assert thread.comments.count() == 1


# --- carrying ----------------------------------------------------------------------------------


def test_map_line_through_hunks():
    # -U0 hunks: two lines inserted after line 1; line 5 changed; lines 8-9 removed.
    hunks = [(1, 0, 2, 2), (5, 1, 7, 1), (8, 2, 9, 0)]
    assert [gitfiles.map_line(hunks, n) for n in range(1, 12)] == [1, 4, 5, 6, None, 8, 9, None, None, 10, 11]
    assert gitfiles.map_range(hunks, 2, 4) == (4, 6)
    assert gitfiles.map_range(hunks, 4, 6) is None  # line 5 changed
    assert gitfiles.map_range([(3, 0, 4, 1)], 2, 4) is None  # a line inserted inside the range
    assert gitfiles.map_range([], 2, 4) == (2, 4)


def test_a_thread_follows_when_lines_are_inserted_above(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal, line_start=5, line_end=6)
    revise(scene, proposal, {"code.txt": "new a\nnew b\n" + TEN})
    moved = position(scene, proposal, thread)
    assert (moved.current, moved.path, moved.start, moved.end) == (True, "code.txt", 7, 8)
    # On its own revision it stays where it was written.
    assert position(scene, proposal, thread, selectors.revision_by_number(proposal, 1)).start == 5


def test_a_thread_goes_outdated_when_its_lines_change(scene):
    proposal = propose(scene)
    changed = comment(scene, proposal, line_start=5)
    ranged = comment(scene, proposal, line_start=8, line_end=9)
    kept = comment(scene, proposal, line_start=2)
    lines = TEN.replace("line 5\n", "line five\n").replace("line 8\nline 9\n", "line 8\ninserted\nline 9\n")
    revise(scene, proposal, {"code.txt": lines})
    assert not position(scene, proposal, changed).current
    assert not position(scene, proposal, ranged).current  # a line inserted inside its range
    assert position(scene, proposal, kept).start == 2
    revise(scene, proposal, {"code.txt": None})
    assert not position(scene, proposal, kept).current  # the file is gone


def test_a_thread_survives_a_rebase_onto_a_moved_target(scene):
    proposal = propose(scene, files={"a.txt": "one\nTWO\nthree\n"})
    new_side = comment(scene, proposal, line_start=3)
    old_side = comment(scene, proposal, path="a.txt", side="old", line_start=3)
    scene.commit("main moves", {"a.txt": "zero\none\ntwo\nthree\n", "main.txt": "m\n"})
    scene.publish("main")
    revision = revise(scene, proposal, {"more.txt": "m\n"}, rebase_onto="main")
    assert revision.base_sha == scene.tip("refs/heads/main")
    assert position(scene, proposal, new_side).start == 3  # code.txt did not change
    assert position(scene, proposal, old_side).start == 4  # the base grew a line above it


def test_a_thread_follows_a_rename(scene):
    proposal = propose(scene, files={"keep.txt": "keep\nmore\n"})
    thread = comment(scene, proposal, path="keep.txt", line_start=2)
    revision = revise(scene, proposal, {"keep.txt": None, "kept.txt": "keep\nmore\n"})
    assert not position(scene, proposal, thread, revision).current
    followed = position(scene, proposal, thread, revision, {"keep.txt": "kept.txt"})
    assert (followed.path, followed.start) == ("kept.txt", 2)


def test_carrying_runs_no_git_once_cached(scene, monkeypatch):
    proposal = propose(scene)
    threads_ = [comment(scene, proposal, line_start=n) for n in (2, 5, 8)]
    revise(scene, proposal, {"code.txt": "top\n" + TEN})
    latest = selectors.latest_revision(proposal)
    loaded = list(Thread.objects.select_related("revision"))
    first = carry.positions(scene.repo.disk_path, loaded, latest)
    calls = []
    monkeypatch.setattr(gitfiles, "run_git", lambda *a, **k: calls.append(a))
    again = carry.positions(scene.repo.disk_path, loaded, latest)
    assert calls == [] and again == first
    assert [first[t.pk].start for t in threads_] == [3, 6, 9]


def test_file_lines_helper_numbers_like_git():
    assert gitfiles.split_lines(b"a\r\nb\n\nc") == ["a", "b", "", "c"]
    assert gitfiles.split_lines(b"") == []
    assert numbered("x", "y") == "x\ny\n"


def test_carrying_batches_files_with_odd_names(scene):
    odd = ['tab\tand "quote".txt', "ünïcode dir/fïle.txt", "sub/-dash.txt", "a\\back.txt", ":(glob)*.txt"]
    proposal = propose(scene, files={name: TEN for name in odd})
    made = [comment(scene, proposal, path=name, line_start=4) for name in odd]
    revise(scene, proposal, {name: "new\n" + TEN for name in odd})
    loaded = list(Thread.objects.select_related("revision").filter(pk__in=[t.pk for t in made]))
    placed = carry.positions(scene.repo.disk_path, loaded, selectors.latest_revision(proposal))
    assert [(placed[t.pk].path, placed[t.pk].start) for t in made] == [(name, 5) for name in odd]


def test_authors_edit_and_delete_their_comments(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal, body="first")
    reply = threads.thread_reply(thread=thread, user=scene.alice, body="second")
    first = thread.comments.get(author=scene.bob)
    with pytest.raises(Forbidden):
        threads.comment_edit(comment=first, user=scene.alice, body="mine now")
    with pytest.raises(Forbidden):
        threads.comment_delete(comment=first, user=scene.maint)
    with pytest.raises(InvalidInput):
        threads.comment_edit(comment=first, user=scene.bob, body="  ")
    assert threads.comment_edit(comment=first, user=scene.bob, body="first, edited").body == "first, edited"
    assert threads.comment_delete(comment=first, user=scene.bob) is False  # the reply keeps the thread
    assert list(thread.comments.values_list("body", flat=True)) == ["second"]
    assert threads.comment_delete(comment=reply, user=scene.alice) is True
    assert not Thread.objects.filter(pk=thread.pk).exists()
    old = comment(scene, proposal, path="a.txt", side="old", line_start=1, body="old side")
    with pytest.raises(InvalidInput):
        threads.comment_edit(comment=old.comments.get(), user=scene.bob, body="```suggestion\nx\n```")
