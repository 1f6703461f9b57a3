"""The thread HTML built in Python (reviews.threads.render): everything from people escaped
as autoescape would, the sanitized Markdown kept, the forms this viewer may use and no other."""

from __future__ import annotations

from django.utils import timezone
from django.utils.safestring import SafeString

from reviews.models import Comment, ProposalRevision, Thread
from reviews.threads.carry import Position
from reviews.threads.render import Viewer, thread_html
from tests.factories import UserFactory

XSS = '<img src=x onerror="alert(1)">&\''
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;&#x27;"


def scene(*, resolved=False):
    thread = Thread(pk=7, path=f"src/{XSS}.py", side="new", line_start=3, line_end=4, context=[[3, XSS]])
    thread.revision = ProposalRevision(number=1)
    if resolved:
        thread.resolved_at = timezone.now()
        thread.resolved_by = UserFactory.build(username="mallory<b>")
    c = Comment(pk=11, author_id=5, author_name=f"eve{XSS}", body=XSS, created_at=timezone.now())
    c.html = SafeString("<p>kept <em>as sanitized</em></p>")
    c.suggestion = True
    return thread, [c]


def viewer(**kw):
    base = {"signed_in": True, "user_pk": 5, "may_apply": True, "threads_url": "/o/r/proposals/1/threads",
            "back": "", "head": "a" * 40, "csrf": "tok"}  # fmt: skip
    return Viewer(**(base | kw))


def test_everything_from_people_is_escaped_and_the_markdown_kept():
    thread, comments = scene(resolved=True)
    html = str(
        thread_html(thread, comments, Position(thread.path, "new", None, None), "outdated", viewer(), True)
    )
    assert "<img" not in html and "<b>" not in html
    assert html.count(ESCAPED) == 4  # the path, the context line, the author, the body to edit
    assert "mallory&lt;b&gt;" in html and "<p>kept <em>as sanitized</em></p>" in html
    assert '<tr class="anchored"><td class="ln">3</td>' in html and "lines 3&ndash;4 of revision 1" in html
    assert "Apply suggestion" not in html  # outdated: nothing to apply it to
    assert 'value="0" class="button small secondary">Unresolve' in html


def test_the_forms_follow_the_viewer():
    thread, comments = scene()
    moved = Position(thread.path, "new", 5, 6)
    mine = str(thread_html(thread, comments, moved, "line", viewer(), True))
    assert 'action="/o/r/proposals/1/threads/7/comments/11"' in mine  # edit: the author's own
    assert 'action="/o/r/proposals/1/threads/7/comments/11/apply"' in mine and 'value="tok"' in mine
    assert "lines 5&ndash;6" in mine and "(written on revision 1, lines 3&ndash;4)" in mine
    other = str(thread_html(thread, comments, moved, "line", viewer(user_pk=6, may_apply=False), False))
    assert "/comments/11" not in other and "/resolve" not in other and "/reply" in other
    out = str(
        thread_html(
            thread,
            comments,
            moved,
            "line",
            viewer(signed_in=False, user_pk=None, may_apply=False, csrf=""),
            False,
        )
    )
    assert "<form" not in out and "csrfmiddlewaretoken" not in out
