"""Threads on the proposal page: placed on their diff line, outdated beside the diff, the forms
they post to, escaping, and hidden work."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from repos.models import Visibility
from reviews.models import Thread
from tests.factories import UserFactory
from tests.reviews.threads_util import REF, TEN, comment, propose, revise

pytestmark = pytest.mark.django_db
PAGE = "/owner/project/proposals/1"
XSS = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"


def client(user=None) -> Client:
    c = Client()
    if user is not None:
        c.force_login(user)
    return c


def after_line(html: str, number: int, thread: Thread) -> bool:
    """Whether the thread is in the annotation row right below new line `number`."""
    pattern = (
        rf'<td class="ln">{number}</td><td class="code">[^<]*</td></tr>\s*'
        rf'<tr class="annotation"><td colspan="3">\s*(<div class="thread[^"]*" id="thread-\d+".*?</details>\s*</div>\s*)*'
        rf'<div class="thread[^"]*" id="thread-{thread.pk}"'
    )
    return re.search(pattern, html, re.S) is not None


def test_threads_sit_on_their_lines_and_follow_revisions(scene):
    proposal = propose(scene)
    follows = comment(scene, proposal, line_start=4, body="Follows")
    goes = comment(scene, proposal, line_start=8, body="Goes")
    page = client(scene.bob).get(PAGE).content.decode()
    assert after_line(page, 4, follows) and after_line(page, 8, goes) and not after_line(page, 5, follows)
    assert "2 unresolved threads of 2" in page

    revise(scene, proposal, {"code.txt": "new\n" + TEN.replace("line 8\n", "eight\n")})
    page = client(scene.bob).get(PAGE).content.decode()
    assert after_line(page, 5, follows) and not after_line(page, 4, follows)
    outdated = page[page.index('id="threads"') :]
    assert f'id="thread-{goes.pk}"' in outdated and "outdated" in outdated
    assert "line 8</td>" in outdated  # its original lines, quoted
    assert "1 outdated" in page
    # On the revision it was written on, it is where it was written.
    old = client(scene.bob).get(f"{PAGE}/revisions/1").content.decode()
    assert after_line(old, 8, goes)


def test_a_thread_outside_the_hunks_is_shown_under_its_file(scene):
    long = "".join(f"row {n}\n" for n in range(1, 41))
    scene.commit("long file", {"long.txt": long})
    scene.publish("main")
    proposal = propose(scene, files={"long.txt": long.replace("row 40\n", "row forty\n")})
    far = comment(scene, proposal, path="long.txt", line_start=3, body="Far from the change")
    page = client(scene.bob).get(PAGE).content.decode()
    section = page[page.index('data-path="long.txt"') :]
    assert f'id="thread-{far.pk}"' in section[: section.index("</section>")]
    assert not after_line(page, 3, far)


def test_the_forms_open_reply_resolve_and_apply(scene, enqueued, django_capture_on_commit_callbacks):
    proposal = propose(scene)
    bob, alice = client(scene.bob), client(scene.alice)
    created = bob.post(
        f"{PAGE}/threads",
        {
            "revision": 1,
            "path": "code.txt",
            "side": "new",
            "line_start": 2,
            "line_end": 3,
            "body": "```suggestion\nTWO\nTHREE\n```",
        },
    )
    thread = Thread.objects.get()
    assert created.status_code == 302 and created["Location"] == f"{PAGE}#thread-{thread.pk}"
    assert (thread.line_start, thread.line_end, thread.created_by) == (2, 3, scene.bob)
    reply = bob.post(f"{PAGE}/threads/{thread.pk}/reply", {"body": "Also", "back": "1"})
    assert reply["Location"] == f"{PAGE}/revisions/1#thread-{thread.pk}"
    page = alice.get(PAGE).content.decode()
    assert "Apply suggestion" in page and "Resolve</button>" in page
    assert "Also" not in page[page.index('<section class="comments">') :]  # not a proposal comment
    assert "Apply suggestion" not in bob.get(PAGE).content.decode()  # bob may not commit to alice's ref
    head = proposal.revisions.get().head_sha
    suggestion = thread.comments.first()
    with django_capture_on_commit_callbacks(execute=True):
        applied = alice.post(f"{PAGE}/threads/{thread.pk}/comments/{suggestion.pk}/apply", {"head": head})
    assert applied.status_code == 302
    suggestion.refresh_from_db()
    assert suggestion.suggestion_applied_sha == scene.tip(REF)
    assert scene.file(REF, "code.txt").startswith("line 1\nTWO\nTHREE\nline 4\n")
    page = alice.get(PAGE).content.decode()
    assert "Suggestion applied as" in page
    alice.post(f"{PAGE}/threads/{thread.pk}/resolve", {"resolved": "1"})
    thread.refresh_from_db()
    assert thread.resolved
    assert "0 unresolved threads of 1" in alice.get(PAGE).content.decode()


def test_only_the_author_gets_edit_forms(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal, body="bob's words")
    mine = thread.comments.get()
    url = f'action="{PAGE}/threads/{thread.pk}/comments/{mine.pk}"'
    assert url in client(scene.bob).get(PAGE).content.decode()
    assert url not in client(scene.alice).get(PAGE).content.decode()
    anonymous = client().get(PAGE).content.decode()
    assert url not in anonymous and "Resolve</button>" not in anonymous and "thread-form" not in anonymous
    scene.bob.delete()  # the comment stays, with no author: still nobody's to edit
    assert url not in client().get(PAGE).content.decode()
    edited = client(scene.alice).post(f"{PAGE}/threads/{thread.pk}/comments/{mine.pk}", {"body": "x"})
    assert edited.status_code == 302 and thread.comments.get().body == "bob's words"


def test_bad_form_input_comes_back_as_a_message(scene):
    propose(scene)
    bob = client(scene.bob)
    response = bob.post(
        f"{PAGE}/threads",
        {"revision": 1, "path": "code.txt", "side": "new", "line_start": 40, "body": "x"},
        follow=True,
    )
    assert "there is no line 40" in response.content.decode()
    for revision in ("9", "x", ""):
        bob.post(
            f"{PAGE}/threads",
            {"revision": revision, "path": "code.txt", "side": "new", "line_start": 1, "body": "x"},
        )
    assert not Thread.objects.exists()
    assert client().post(f"{PAGE}/threads", {}).status_code == 302  # to sign in
    assert bob.post(f"{PAGE}/threads/999/reply", {"body": "x"}).status_code == 404


def test_user_content_is_escaped(scene):
    name = f"{XSS}.txt"
    proposal = propose(scene, files={name: f"{XSS}\n"})
    comment(scene, proposal, path=name, line_start=1, body=f"Look {XSS}")
    revise(scene, proposal, {name: "changed\n"})  # outdated: its context is quoted too
    page = client(scene.bob).get(PAGE).content.decode()
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in page


def test_hidden_work_and_private_repositories_are_not_found(scene):
    proposal = propose(scene)
    thread = comment(scene, proposal)
    scene.repo.visibility = Visibility.PRIVATE
    scene.repo.save()
    outsider = client(UserFactory(username="outsider"))
    assert outsider.get(PAGE).status_code == 404
    assert (
        outsider.post(
            f"{PAGE}/threads",
            {"revision": 1, "path": "code.txt", "side": "new", "line_start": 1, "body": "x"},
        ).status_code
        == 404
    )
    assert outsider.post(f"{PAGE}/threads/{thread.pk}/reply", {"body": "x"}).status_code == 404
    assert outsider.post(f"{PAGE}/threads/{thread.pk}/resolve", {"resolved": "1"}).status_code == 404
    assert thread.comments.count() == 1


def test_cached_markdown_follows_a_renamed_repository(scene):
    from repos import lifecycle

    proposal = propose(scene)
    comment(scene, proposal, body="See [the doc](doc.md).")
    assert 'href="/owner/project/blob/main/doc.md"' in client(scene.bob).get(PAGE).content.decode()
    lifecycle.repository_move(repo=scene.repo, acting_user=scene.owner, new_name="renamed")
    page = client(scene.bob).get("/owner/renamed/proposals/1").content.decode()
    assert 'href="/owner/renamed/blob/main/doc.md"' in page
