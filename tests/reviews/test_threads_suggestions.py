"""Suggested changes: a ```suggestion block applied as a commit on the proposal's ref, and the
cases that are refused with nothing committed."""

from __future__ import annotations

import pytest

from gitcore.git import run_git
from repos.errors import Conflict, Forbidden, InvalidInput
from reviews import selectors, services
from reviews.models import Comment
from reviews.threads.markup import suggestion_text
from reviews.threads.suggestions import replaced, suggestion_apply
from tests.reviews.threads_util import REF, TEN, comment, propose, revise

pytestmark = pytest.mark.django_db


def suggest(scene, proposal, text="LINE FIVE", **kwargs):
    thread = comment(scene, proposal, body=f"Better:\n```suggestion\n{text}\n```", **kwargs)
    return thread.comments.get()


def test_suggestion_blocks_are_found():
    assert suggestion_text("a\n```suggestion\nx\ny\n```\nb") == ["x", "y"]
    assert suggestion_text("~~~~ suggestion\n```\nz\n~~~~") == ["```", "z"]
    assert suggestion_text("```suggestion\n```") == []
    assert suggestion_text("```python\nx\n```") is None
    assert suggestion_text("    ```suggestion\nx\n```") is None  # indented code, not a fence
    assert replaced("a\nb\nc\n", 2, 2, ["B", "B2"]) == "a\nB\nB2\nc\n"
    assert replaced("a\nb\nc", 3, 3, ["C"]) == "a\nb\nC"  # no newline at the end stays so
    assert replaced("a\nb\nc", 1, 1, ["A"]) == "A\nb\nc"
    assert replaced("a\nb\n", 1, 2, []) == ""


def test_the_author_applies_a_suggestion_as_a_commit(scene, enqueued, django_capture_on_commit_callbacks):
    proposal = propose(scene)
    suggestion = suggest(scene, proposal, line_start=5)
    before = scene.tip(REF)
    with django_capture_on_commit_callbacks(execute=True):
        sha = suggestion_apply(comment=suggestion, user=scene.alice, host="forge.example")
    assert scene.tip(REF) == sha and scene.show(sha, "%P") == before
    assert scene.file(sha, "code.txt") == TEN.replace("line 5\n", "LINE FIVE\n")
    assert scene.show(sha, "%an|%B") == (
        "alice|Apply suggestion from bob\n\nCo-authored-by: bob <bob@users.noreply.forge.example>"
    )
    suggestion.refresh_from_db()
    assert suggestion.suggestion_applied_sha == sha
    latest = selectors.latest_revision(proposal)
    assert (latest.number, latest.head_sha) == (2, sha)  # recorded as a push: a new revision
    with pytest.raises(Conflict) as again:
        suggestion_apply(comment=suggestion, user=scene.alice)
    assert again.value.code == "already_applied"


def test_a_carried_thread_applies_on_the_lines_it_moved_to(scene, enqueued):
    proposal = propose(scene, text=TEN.replace("\n", "\r\n"))
    suggestion = suggest(scene, proposal, text="first\nsecond", line_start=2, line_end=3)
    revise(scene, proposal, {"code.txt": "top\r\n" + TEN.replace("\n", "\r\n")})
    sha = suggestion_apply(comment=suggestion, user=scene.owner)  # an admin may edit workspaces
    lines = run_git(["cat-file", "blob", f"{sha}:code.txt"], repo=scene.bare).stdout.decode().split("\r\n")
    assert lines[:5] == ["top", "line 1", "first", "second", "line 4"]  # CRLF kept


def test_refusals_commit_nothing(scene, enqueued):
    proposal = propose(scene)
    suggestion = suggest(scene, proposal, line_start=5)
    plain = comment(scene, proposal, line_start=7, body="no suggestion here").comments.get()
    tip = scene.tip(REF)

    with pytest.raises(Forbidden):  # a reader may not commit to alice's workspace
        suggestion_apply(comment=suggestion, user=scene.bob)
    with pytest.raises(InvalidInput):
        suggestion_apply(comment=plain, user=scene.alice)
    with pytest.raises(Conflict) as stale:
        suggestion_apply(comment=suggestion, user=scene.alice, expected_head="0" * 40)
    assert stale.value.code == "stale_head"

    # The ref moved and no revision recorded it yet.
    scene.checkout("feature")
    scene.commit("unrecorded", {"other.txt": "x\n"})
    scene.publish("feature", REF)
    scene.checkout("main")
    with pytest.raises(Conflict) as moved:
        suggestion_apply(comment=suggestion, user=scene.alice)
    assert moved.value.code == "stale_head"

    # Its lines changed: outdated.
    revise(scene, proposal, {"code.txt": TEN.replace("line 5\n", "line 5 changed\n")})
    with pytest.raises(Conflict) as outdated:
        suggestion_apply(comment=suggestion, user=scene.alice)
    assert outdated.value.code == "outdated"
    assert Comment.objects.get(pk=suggestion.pk).suggestion_applied_sha == ""

    services.proposal_close(proposal=proposal, user=scene.alice)
    fresh = suggest(scene, proposal, line_start=2)
    with pytest.raises(Conflict):
        suggestion_apply(comment=fresh, user=scene.alice)
    assert scene.tip(REF) != tip and scene.show(REF, "%s") == "more"  # nothing applied


def test_a_suggestion_on_lines_the_file_no_longer_has_is_refused(scene, enqueued):
    proposal = propose(scene)
    suggestion = suggest(scene, proposal, line_start=10)
    revise(scene, proposal, {"code.txt": None})
    with pytest.raises(Conflict):
        suggestion_apply(comment=suggestion, user=scene.alice)
