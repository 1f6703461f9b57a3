"""A line-comment thread as HTML, built in Python: the template engine took ~1 ms a thread
(lookups, number localization, a render per thread), which a hundred threads turn into a third
of a warm proposal page (bench/proposal_page.py).

Escaping is autoescape's: every value goes through html.escape unless it is a SafeString (a
comment's `html`: nh3's sanitized Markdown). Numbers are written as the templates wrote them
(no thousands separator is configured)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from reviews.models import Thread
from reviews.threads.carry import Position


def _e(value) -> str:
    """As autoescape: SafeStrings as they are, anything else escaped."""
    return value if isinstance(value, SafeString) else escape(str(value))


def _ago(when) -> str:
    # The `timesince` filter's answer, "" for what it cannot compare.
    try:
        return timesince(when) if when else ""
    except (ValueError, TypeError):
        return ""


def _lines(start, end) -> str:
    return f"line {start}" if start == end else f"lines {start}&ndash;{end}"


@dataclass(frozen=True)
class Viewer:
    """What one viewer may do with the threads of one page: the same for every thread."""

    signed_in: bool
    user_pk: int | None  # None signed out, as is the author of a comment whose account is gone
    may_apply: bool  # on the latest revision, and allowed to push to the proposal
    threads_url: str  # the proposal's .../threads: the forms' URLs are below it
    back: str  # the shown revision's number when it is not the latest, else ""
    head: str  # the latest revision's head: an applied suggestion goes on top of it
    csrf: str  # this request's token: the HTML is never cached

    def form_open(self, action: str, attrs: str = "") -> str:
        return (
            f'<form method="post"{attrs} action="{_e(self.threads_url)}/{action}">'
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{_e(self.csrf)}">'
        )


def thread_html(
    thread: Thread, comments: list, position: Position, where: str, viewer: Viewer, may_resolve: bool
) -> SafeString:
    """One thread. `comments` carry `html` (SafeString) and
    `suggestion` (whether the comment offers a change); `where` is "line", "file" or
    "outdated"."""
    pk, out = thread.pk, []
    classes = (
        "thread" + (" resolved" if thread.resolved else "") + (" outdated" if where == "outdated" else "")
    )
    out.append(f'<div class="{classes}" id="thread-{pk}" data-thread="{pk}">\n')
    out.append(f"<details{'' if thread.resolved else ' open'}>\n")
    out.append(f'<summary><code class="path">{_e(thread.path)}</code>\n')
    if where == "outdated":
        out.append(
            f'<span class="badge">outdated</span> {_lines(thread.line_start, thread.line_end)}'
            f" of revision {thread.revision.number}\n"
        )
    else:
        out.append(_lines(position.start, position.end))
        if (position.path, position.start) != (thread.path, thread.line_start):
            out.append(
                f' <span class="muted">(written on revision {thread.revision.number}, '
                f"lines {thread.line_start}&ndash;{thread.line_end})</span>"
            )
        out.append("\n")
    out.append(f'<span class="muted">({_e(thread.get_side_display())} side)</span>\n')
    out.append(f"&middot; {len(comments)} comment{'' if len(comments) == 1 else 's'}\n")
    if thread.resolved:
        out.append('&middot; <span class="badge">resolved</span>')
        if thread.resolved_by is not None:
            out.append(f" by {_e(thread.resolved_by.username)}")
    out.append("</summary>\n")
    if where == "outdated" and thread.context:
        out.append('<table class="diff thread-context"><tbody>\n')
        for n, text in thread.context:
            kind = "anchored" if thread.line_start <= n <= thread.line_end else "context"
            out.append(f'<tr class="{kind}"><td class="ln">{_e(n)}</td><td class="code">{_e(text)}</td></tr>')
        out.append("\n</tbody></table>\n")
    for c in comments:
        out.append(_comment_html(thread, c, viewer, position.current))
    back = f'<input type="hidden" name="back" value="{_e(viewer.back)}">\n'
    if viewer.signed_in:
        out.append(viewer.form_open(f"{pk}/reply", ' class="thread-reply"') + "\n" + back)
        out.append(
            f'<label class="visually-hidden" for="reply-{pk}">Reply</label>\n'
            f'<textarea id="reply-{pk}" name="body" rows="2" required placeholder="Reply (Markdown)"></textarea>\n'
            '<button type="submit" class="button small">Reply</button>\n</form>\n'
        )
    if may_resolve:
        out.append(viewer.form_open(f"{pk}/resolve", ' class="inline thread-resolve"') + "\n" + back)
        if thread.resolved:
            out.append(
                '<button type="submit" name="resolved" value="0" class="button small secondary">Unresolve</button>'
            )
        else:
            out.append(
                '<button type="submit" name="resolved" value="1" class="button small secondary">Resolve</button>'
            )
        out.append("\n</form>\n")
    out.append("</details>\n</div>\n")
    return mark_safe("".join(out))  # noqa: S308 - built from escaped values only


def _comment_html(thread: Thread, c, viewer: Viewer, current: bool) -> str:
    out = [
        f'<article class="thread-comment" id="comment-{c.pk}">\n'
        f'<header class="muted"><strong>{_e(c.author_name)}</strong> &middot; {_e(_ago(c.created_at))} ago</header>\n'
        f'<div class="markdown">{_e(c.html)}</div>\n'
    ]
    action = f"{thread.pk}/comments/{c.pk}"
    if viewer.signed_in and c.author_id == viewer.user_pk and not c.suggestion_applied_sha:
        out.append(
            '<details class="comment-change"><summary class="muted">Edit</summary>\n'
            + viewer.form_open(action)
            + f'\n<input type="hidden" name="back" value="{_e(viewer.back)}">\n'
            f'<textarea name="body" rows="3" required>{_e(c.body)}</textarea>\n'
            '<button type="submit" class="button small">Save</button>\n'
            '<button type="submit" name="delete" value="1" class="button small danger" formnovalidate>Delete</button>\n'
            "</form>\n</details>\n"
        )
    if c.suggestion:
        if c.suggestion_applied_sha:
            out.append(
                '<p class="muted suggestion-applied">Suggestion applied as '
                f'<code class="sha">{_e(c.suggestion_applied_sha[:12])}</code>.</p>\n'
            )
        elif viewer.may_apply and current:
            out.append(
                viewer.form_open(f"{action}/apply", ' class="inline apply-suggestion"')
                + f'<input type="hidden" name="head" value="{_e(viewer.head)}">'
                '<button type="submit" class="button small">Apply suggestion</button></form>\n'
            )
    out.append("</article>\n")
    return "".join(out)
