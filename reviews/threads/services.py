"""Writes for line comments: open a thread on lines of one revision's diff, reply, resolve and
unresolve. One transaction each; errors are repos.errors with stable codes, raised before
anything is written. Applying a suggestion lives in reviews.threads.suggestions.

Who may read the proposal may comment on its lines, as on the proposal itself
(reviews.services.comment_add): the proposal and the revision must be visible to them."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.selectors import can_read
from repos.visibility import view_for
from reviews import events, selectors
from reviews.models import COMMENT_MAX, Comment, Proposal, ProposalRevision, Side, Thread
from reviews.services import clean_text
from reviews.threads import gitfiles
from reviews.threads.carry import side_commit
from reviews.threads.markup import suggestion_text

MAX_RANGE = 500  # lines one thread may cover
MAX_PATH = 4096
MAX_FILE_BYTES = 5 * 1024 * 1024  # larger files are not read to check or quote lines
CONTEXT_LINES = 3  # quoted around the anchored lines, for when they are gone
CONTEXT_LINE_CHARS = 1000


def require_reader(proposal: Proposal, user, revision: ProposalRevision | None = None) -> None:
    """Forbidden for anonymous users; NotFound when the user may not see the proposal (or
    this revision of it: one that reaches taken-down or hidden work)."""
    if user is None or not user.is_authenticated:
        raise Forbidden("Sign in to comment.", code="sign_in")
    repo = proposal.repository
    view = view_for(repo, user)
    if not can_read(user, repo) or not selectors.proposal_visible(proposal, view):
        raise NotFound("Proposal not found.")
    if revision is not None and view.reaches_hidden([revision.head_sha]):
        raise NotFound("Revision not found.")


def clean_body(body) -> str:
    body = clean_text(body, limit=COMMENT_MAX, field="body")
    if not body:
        raise InvalidInput("A comment needs some text.", fields={"body": ["required"]})
    return body


def clean_path(path) -> str:
    """A path as a tree holds it: relative, no empty, `.` or `..` part (git's `<rev>:<path>`
    syntax would read `./x` against a working directory), no NUL or newline."""
    path = str(path or "")
    parts = path.split("/")
    if (
        not path
        or len(path) > MAX_PATH
        or any(c in path for c in "\0\n")
        or any(p in ("", ".", "..") for p in parts)
    ):
        raise InvalidInput("Name a file of the diff.", fields={"path": ["invalid"]})
    return path


def _lines(line_start, line_end) -> tuple[int, int]:
    try:
        start, end = int(line_start), int(line_end if line_end not in (None, "") else line_start)
    except (TypeError, ValueError):
        raise InvalidInput("Line numbers are whole numbers.", fields={"line_start": ["invalid"]}) from None
    if start < 1 or end < start:
        raise InvalidInput(
            "Lines run from a first line (1 or more) to a last one at or after it.",
            fields={"line_start": ["invalid"]},
        )
    if end - start + 1 > MAX_RANGE:
        raise InvalidInput(f"A comment covers at most {MAX_RANGE} lines.", fields={"line_end": ["too_many"]})
    return start, end


def file_lines(proposal: Proposal, revision: ProposalRevision, path: str, side: str) -> list[str]:
    """The text lines of `path` on that side of the revision; NotFound when it is not a file
    there, InvalidInput when it is binary or too large to comment on."""
    repo_path = proposal.repository.disk_path
    blob = gitfiles.blobs_at(repo_path, [(side_commit(revision, side), path)])[
        side_commit(revision, side), path
    ]
    where = "before" if side == Side.OLD else "after"
    if blob is None:
        raise NotFound(
            f"{path[:300]!r} is not a file {where} revision {revision.number}'s changes.",
            fields={"path": ["missing"]},
        )
    if blob.size > MAX_FILE_BYTES:
        raise InvalidInput(
            f"{path[:300]!r} is too large to comment on its lines.",
            code="too_large",
            fields={"path": ["too_large"]},
        )
    data = gitfiles.read_blob(repo_path, blob.oid)
    if gitfiles.is_binary(data):
        raise InvalidInput(
            f"{path[:300]!r} is a binary file: comment on the proposal instead.",
            code="binary",
            fields={"path": ["binary"]},
        )
    return gitfiles.split_lines(data)


@transaction.atomic
def thread_create(
    *,
    proposal: Proposal,
    user,
    revision: ProposalRevision,
    path: str,
    side: str,
    line_start: int,
    line_end: int,
    body: str,
) -> Thread:
    """A thread on lines line_start..line_end of `path` on `side` of `revision`, with its
    first comment."""
    require_reader(proposal, user, revision)
    if revision is None or revision.proposal_id != proposal.pk:
        raise NotFound("That revision is not one of this proposal's.", fields={"revision": ["unknown"]})
    body = clean_body(body)
    path = clean_path(path)
    if side not in Side.values:
        raise InvalidInput("The side is old or new.", fields={"side": ["invalid"]})
    start, end = _lines(line_start, line_end)
    if side == Side.OLD and suggestion_text(body) is not None:
        raise InvalidInput(
            "A suggestion replaces lines of the new version: comment on the new side.",
            fields={"body": ["suggestion_on_old_side"]},
        )
    lines = file_lines(proposal, revision, path, side)
    if end > len(lines):
        raise InvalidInput(
            f"{path[:300]!r} has {len(lines)} line{'s' if len(lines) != 1 else ''} there: "
            f"there is no line {end}.",
            fields={"line_end": ["missing"]},
        )
    first, last = max(1, start - CONTEXT_LINES), min(len(lines), end + CONTEXT_LINES)
    context = [[n, lines[n - 1][:CONTEXT_LINE_CHARS]] for n in range(first, last + 1)]
    thread = Thread.objects.create(
        proposal=proposal,
        revision=revision,
        path=path,
        side=side,
        line_start=start,
        line_end=end,
        context=context,
        created_by=user,
    )
    _comment(thread, user, body)
    return thread


def _comment(thread: Thread, user, body: str) -> Comment:
    comment = Comment.objects.create(
        proposal=thread.proposal,
        author=user,
        author_name=user.username,
        body=body,
        revision=thread.revision,
        thread=thread,
    )
    events.comment_added(comment, actor=user)
    return comment


@transaction.atomic
def thread_reply(*, thread: Thread, user, body: str) -> Comment:
    require_reader(thread.proposal, user)
    return _comment(thread, user, clean_body(body))


def may_resolve(user, thread: Thread) -> bool:
    """Its participants, the proposal's author and the repository's maintainers."""
    if user is None or not user.is_authenticated:
        return False
    proposal = thread.proposal
    return (
        proposal.author_id == user.pk
        or thread.created_by_id == user.pk
        or selectors.is_maintainer(user, proposal.repository)
        or thread.comments.filter(author=user).exists()
    )


@transaction.atomic
def thread_resolve(*, thread: Thread, user, resolved: bool) -> Thread:
    require_reader(thread.proposal, user)
    if not may_resolve(user, thread):
        raise Forbidden(
            "Only the thread's participants, the proposal's author and maintainers may resolve it."
        )
    if bool(resolved) != thread.resolved:
        thread.resolved_at = timezone.now() if resolved else None
        thread.resolved_by = user if resolved else None
        thread.save(update_fields=["resolved_at", "resolved_by"])
    return thread


def _own_comment(comment: Comment, user) -> Comment:
    require_reader(comment.proposal, user)
    if comment.thread_id is None:
        raise NotFound("That comment is not on lines of the diff.")
    if comment.author_id != user.pk:
        raise Forbidden("Only its author may change a comment.")
    if comment.suggestion_applied_sha:
        raise Conflict("This suggestion was applied: the comment stays as it was.", code="already_applied")
    return comment


@transaction.atomic
def comment_edit(*, comment: Comment, user, body: str) -> Comment:
    """Its author changes a line comment's text (not once its suggestion was applied)."""
    comment = _own_comment(comment, user)
    body = clean_body(body)
    if comment.thread.side == Side.OLD and suggestion_text(body) is not None:  # type: ignore[union-attr]  # checked above
        raise InvalidInput(
            "A suggestion replaces lines of the new version: this comment is on the old side.",
            fields={"body": ["suggestion_on_old_side"]},
        )
    comment.body = body
    comment.save(update_fields=["body"])
    return comment


@transaction.atomic
def comment_delete(*, comment: Comment, user) -> bool:
    """Its author removes a line comment; a thread left without comments goes with it.
    Returns whether the thread is gone."""
    comment = _own_comment(comment, user)
    thread = comment.thread
    assert thread is not None
    comment.delete()
    if not thread.comments.exists():
        thread.delete()
        return True
    return False
