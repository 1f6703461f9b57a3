"""What the proposal page needs of threads: each shown on its line of the diff (Line.after),
the outdated ones beside it.

A thread is rendered once (reviews.threads.render, escaped as autoescape would; comment bodies
as the sanitized Markdown of reviews.views._markdown) and placed on the shown revision: below the
diff line its last line maps to, below its file when that line is outside the diff's hunks,
in the list of threads on files this diff does not show, or in the outdated list with the
lines it was written on. Carrying runs no git on a page shown again (reviews.threads.carry);
the Markdown of each comment is cached by its text."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from repos import diffs
from reviews import selectors
from reviews.models import Proposal, ProposalRevision, Side, Thread
from reviews.threads import carry
from reviews.threads.markup import suggestion_text
from reviews.threads.render import Viewer, thread_html
from reviews.threads.suggestions import may_apply

MARKDOWN_SECONDS = 7 * 24 * 3600
EACH_MARKDOWN_WRITES = 10


@dataclass
class _Slots:
    """Where rendered threads go: per diff line, per file, or in the lists under the diff."""

    lines: dict[int, list[str]] = field(default_factory=dict)  # id(Line): threads below it
    files: dict[int, list[str]] = field(default_factory=dict)  # id(FileDiff): threads below it
    elsewhere: list[str] = field(default_factory=list)
    outdated: list[str] = field(default_factory=list)


def _line_index(diff: diffs.Diff, wanted: set[str]) -> tuple[dict, dict]:
    """{(path, side, number): Line} and {(path, side): FileDiff} of the shown diff, for the
    files named in `wanted` (those that have threads: the rest need no index)."""
    lines: dict[tuple[str, str, int], diffs.Line] = {}
    files: dict[tuple[str, str], diffs.FileDiff] = {}
    for f in diff.files:
        if f.old_path not in wanted and f.new_path not in wanted:
            continue
        for side, path in ((Side.OLD, f.old_path), (Side.NEW, f.new_path)):
            if path is not None:
                files.setdefault((path, side), f)
        for hunk in f.hunks:
            for line in hunk.lines:
                if line.old is not None and f.old_path is not None:
                    lines[f.old_path, Side.OLD, line.old] = line
                if line.new is not None and f.new_path is not None:
                    lines[f.new_path, Side.NEW, line.new] = line
    return lines, files


def _markdown_all(repo, proposal: Proposal, comments: list) -> None:
    """Set `html` on each comment: its Markdown, sanitized. Cached by text: all of the page's
    comments under one key, so a page shown again reads one entry; after a new comment, each
    comment's own entry (written for the few rendered at a time: every entry costs a write)
    spares rendering the others again."""
    from reviews.views import _markdown  # the page's own renderer: one sanitizer for all comments

    # Relative links lead into this repository's target branch: the HTML depends on both.
    where = f"{repo.owner.username}/{repo.name}\0{proposal.target_branch}"

    def key(text: str) -> str:
        return "threads:md:" + hashlib.sha256(f"{where}\0{text}".encode()).hexdigest()

    keys = [key(c.body) for c in comments]
    whole = key("\0".join(keys))
    known = cache.get(whole)
    if known is not None and len(known) == len(comments):
        for c, html in zip(comments, known, strict=True):
            c.html = mark_safe(html)  # noqa: S308 - nh3's output, cached as it was made
        return
    each = cache.get_many(keys)
    learned = {}
    for c, k in zip(comments, keys, strict=True):
        html = each.get(k)
        if html is None:
            html = learned[k] = str(_markdown(repo, proposal, c.body))
        c.html = mark_safe(html)  # noqa: S308 - nh3's output, cached as it was made
    if len(learned) <= EACH_MARKDOWN_WRITES:
        cache.set_many(learned, MARKDOWN_SECONDS)
    cache.set(whole, [str(c.html) for c in comments], MARKDOWN_SECONDS)


def threads_context(request, repo, proposal, shown, latest, diff) -> dict:
    """Context for reviews/_outdated_threads.html; attaches the threads to `diff`'s lines."""
    threads = list(proposal.threads.select_related("revision", "resolved_by").prefetch_related("comments"))
    comments = [c for t in threads for c in t.comments.all()]
    _markdown_all(repo, proposal, comments)
    renames = {
        f.old_path: f.new_path for f in diff.files if f.status == "renamed" and f.old_path and f.new_path
    }
    placed = carry.positions(repo.disk_path, threads, shown, renames) if threads else {}
    lines, files = _line_index(diff, {p.path for p in placed.values() if p.current})
    slots = _Slots()
    render = _Renderer(request, repo, proposal, shown, latest)
    for thread in threads:
        position = placed[thread.pk]
        if not position.current:
            slots.outdated.append(render(thread, position, "outdated"))
            continue
        line = lines.get((position.path, position.side, position.end))
        if line is not None:
            slots.lines.setdefault(id(line), []).append(render(thread, position, "line"))
        elif (f := files.get((position.path, position.side))) is not None:
            slots.files.setdefault(id(f), []).append(render(thread, position, "file"))
        else:
            slots.elsewhere.append(render(thread, position, "file"))
    for f in diff.files:
        if id(f) in slots.files:
            f.after = _joined([f.after, *slots.files[id(f)]])
        for hunk in f.hunks:
            for line in hunk.lines:
                if id(line) in slots.lines:
                    line.after = _joined([line.after, *slots.lines[id(line)]])
    unresolved = sum(1 for t in threads if not t.resolved)
    return {
        "threads_total": len(threads),
        "threads_unresolved": unresolved,
        "threads_outdated": slots.outdated,
        "threads_elsewhere": slots.elsewhere,
        # The new-thread form's file names: [old path, new path] per file, in the diff's order.
        "thread_files": [[f.old_path, f.new_path] for f in diff.files],
        "thread_form_url": reverse(
            "proposal-threads", args=[repo.owner.username, repo.name, proposal.number]
        ),
        "thread_revision": shown,
    }


def _joined(parts: list[str]) -> SafeString:
    # Each part is autoescaped template output (or the page's SafeString): joining keeps it safe.
    return mark_safe("".join(parts))  # noqa: S308


class _Renderer:
    """One thread as HTML (reviews.threads.render), with the buttons this viewer may use on
    this revision."""

    def __init__(self, request, repo, proposal: Proposal, shown: ProposalRevision, latest):
        user = request.user
        signed_in = user.is_authenticated
        self.user_pk = user.pk if signed_in else None
        self.moderator = signed_in and (proposal.author_id == user.pk or selectors.is_maintainer(user, repo))
        on_latest = latest is not None and shown.pk == latest.pk
        self.viewer = Viewer(
            signed_in=signed_in,
            user_pk=self.user_pk,
            may_apply=on_latest and may_apply(user, proposal),
            # Built once: a reverse() per form of each of a hundred threads is measurable.
            threads_url=reverse("proposal-threads", args=[repo.owner.username, repo.name, proposal.number]),
            back="" if on_latest else str(shown.number),
            head=latest.head_sha if latest else "",
            csrf=get_token(request) if signed_in else "",
        )

    def __call__(self, thread: Thread, position: carry.Position, where: str) -> SafeString:
        comments = list(thread.comments.all())
        for c in comments:
            # Whether the comment offers a change to apply.
            c.suggestion = suggestion_text(c.body) is not None and thread.side == Side.NEW  # type: ignore[attr-defined]
        # Signed out, user_pk is None, as is the author of a comment whose account is gone.
        participant = self.viewer.signed_in and (
            thread.created_by_id == self.user_pk or any(c.author_id == self.user_pk for c in comments)
        )
        return thread_html(thread, comments, position, where, self.viewer, self.moderator or participant)
