"""What the proposal page needs of threads: each shown on its line of the diff (Line.after),
the outdated ones beside it.

A thread is rendered once (reviews.threads.render, escaped as autoescape would; comment bodies
as the sanitized Markdown of reviews.markdown) and placed on the shown revision: below the
diff line its last line maps to, below its file when that line is outside the diff's hunks,
in the list of threads on files this diff does not show, or in the outdated list with the
lines it was written on. Carrying runs no git on a page shown again (reviews.threads.carry);
the Markdown of each comment is cached by its text."""

from __future__ import annotations

import hashlib

from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db.models import Prefetch
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from render import diffs
from reviews import selectors
from reviews.markdown import proposal_markdown
from reviews.models import Proposal, ProposalRevision, Side, Thread
from reviews.threads import carry
from reviews.threads.markup import suggestion_text
from reviews.threads.render import Viewer, thread_html
from reviews.threads.suggestions import may_apply

MARKDOWN_SECONDS = 7 * 24 * 3600
EACH_MARKDOWN_WRITES = 10


class _Slots:
    """Where rendered threads go: below a diff line, below a file, or in the lists under the
    diff. Keyed by id() and holding the objects: only the places that get threads are visited
    again, never the whole diff."""

    def __init__(self) -> None:
        self.lines: dict[int, tuple[diffs.Line, list[str]]] = {}
        self.files: dict[int, tuple[diffs.FileDiff, list[str]]] = {}
        self.elsewhere: list[str] = []
        self.outdated: list[str] = []

    def below_line(self, line: diffs.Line, html: str) -> None:
        self.lines.setdefault(id(line), (line, []))[1].append(html)

    def below_file(self, f: diffs.FileDiff, html: str) -> None:
        self.files.setdefault(id(f), (f, []))[1].append(html)

    def attach(self) -> None:
        for f, parts in self.files.values():
            f.after = _joined([f.after, *parts])
        for line, parts in self.lines.values():
            line.after = _joined([line.after, *parts])


def _files_index(diff: diffs.Diff) -> dict[tuple[str, str], list[diffs.FileDiff]]:
    """{(path, side): the diff's files with that path on that side}, in the diff's order."""
    files: dict[tuple[str, str], list[diffs.FileDiff]] = {}
    for f in diff.files:
        for side, path in ((Side.OLD, f.old_path), (Side.NEW, f.new_path)):
            if path is not None:
                files.setdefault((path, side), []).append(f)
    return files


def _find_line(files: list[diffs.FileDiff], side: str, number: int) -> diffs.Line | None:
    """The shown line `number` of `side` in these files (the last file that has it), looking
    only into the hunk whose range holds it."""
    for f in reversed(files):
        for hunk in f.hunks:
            start, count = (
                (hunk.old_start, hunk.old_count) if side == Side.OLD else (hunk.new_start, hunk.new_count)
            )
            if not start <= number < start + count:
                continue
            for line in hunk.lines:
                if (line.old if side == Side.OLD else line.new) == number:
                    return line
    return None


def _threads(proposal: Proposal) -> list[Thread]:
    """The proposal's threads, each with its revision and resolver set and its comments in
    `comment_list`. The revisions (a few) and resolvers are read once each rather than joined
    into every thread's row: a hundred threads' model instances are most of the time here."""
    threads: list[Thread] = list(
        proposal.threads.prefetch_related(Prefetch("comments", to_attr="comment_list"))
    )
    revisions = {r.pk: r for r in proposal.revisions.all()}
    resolvers = {t.resolved_by_id for t in threads if t.resolved_by_id is not None}
    users = (
        {u.pk: u for u in get_user_model().objects.filter(pk__in=resolvers).only("username")}
        if resolvers
        else {}
    )
    for t in threads:
        t.revision = revisions[t.revision_id]
        t.resolved_by = users.get(t.resolved_by_id) if t.resolved_by_id is not None else None
    return threads


def _markdown_all(repo, proposal: Proposal, comments: list) -> None:
    """Set `html` on each comment: its Markdown, sanitized. Cached by text: all of the page's
    comments under one key, so a page shown again reads one entry; after a new comment, each
    comment's own entry (written for the few rendered at a time: every entry costs a write)
    spares rendering the others again."""
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
            html = learned[k] = str(proposal_markdown(repo, proposal, c.body))
        c.html = mark_safe(html)  # noqa: S308 - nh3's output, cached as it was made
    if len(learned) <= EACH_MARKDOWN_WRITES:
        cache.set_many(learned, MARKDOWN_SECONDS)
    cache.set(whole, [str(c.html) for c in comments], MARKDOWN_SECONDS)


def threads_context(request, repo, proposal, shown, latest, diff) -> dict:
    """Context for reviews/_outdated_threads.html; attaches the threads to `diff`'s lines."""
    threads = _threads(proposal)
    comments = [c for t in threads for c in t.comment_list]  # type: ignore[attr-defined]
    _markdown_all(repo, proposal, comments)
    renames = {
        f.old_path: f.new_path for f in diff.files if f.status == "renamed" and f.old_path and f.new_path
    }
    placed = carry.positions(repo.disk_path, threads, shown, renames) if threads else {}
    files = _files_index(diff)
    slots = _Slots()
    render = _Renderer(request, repo, proposal, shown, latest)
    for thread in threads:
        position = placed[thread.pk]
        if not position.current:
            slots.outdated.append(render(thread, position, "outdated"))
            continue
        on = files.get((position.path, position.side), [])
        line = _find_line(on, position.side, position.end) if on and position.end is not None else None
        if line is not None:
            slots.below_line(line, render(thread, position, "line"))
        elif on:
            slots.below_file(on[0], render(thread, position, "file"))
        else:
            slots.elsewhere.append(render(thread, position, "file"))
    slots.attach()
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
        comments = thread.comment_list  # type: ignore[attr-defined]
        for c in comments:
            # Whether the comment offers a change to apply.
            c.suggestion = suggestion_text(c.body) is not None and thread.side == Side.NEW  # type: ignore[attr-defined]
        # Signed out, user_pk is None, as is the author of a comment whose account is gone.
        participant = self.viewer.signed_in and (
            thread.created_by_id == self.user_pk or any(c.author_id == self.user_pk for c in comments)
        )
        return thread_html(thread, comments, position, where, self.viewer, self.moderator or participant)
