"""Applying a suggested change: the ```suggestion block of a line comment replaces the thread's
lines, as a new commit on the proposal's source ref made server-side.

The commit goes through the web editor's service (workspaces.webedit.service.commit_changes):
the ref moves by compare-and-swap under the repository's lock, after the push policy and the
object checks, and is recorded as a push, which makes the proposal's next revision. Only a
thread that is current on the latest revision is applied (its lines are still where they were
written), only on the head the applier saw, and only once."""

from __future__ import annotations

from django.db import transaction

from gitcore.gittools import ref_map
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from reviews import selectors
from reviews.models import Comment, Proposal, Side
from reviews.threads import carry
from reviews.threads.markup import suggestion_text
from reviews.threads.services import require_reader
from workspaces.webedit import files, service, trees
from workspaces.webedit.places import WORKSPACES, Place, may_write_ref
from workspaces.webedit.types import EditRequest, FileChange


def may_apply(user, proposal: Proposal) -> bool:
    """Its author, and those who may commit to someone else's workspace (admins; maintainers
    while the repository lets them). The push policy judges again when the commit is made."""
    if user is None or not user.is_authenticated or not proposal.is_open:
        return False
    if proposal.author_id == user.pk:
        return True
    ref = proposal.source_ref
    owner = ref.removeprefix(WORKSPACES).split("/", 1)[0] if ref.startswith(WORKSPACES) else None
    return owner is not None and may_write_ref(proposal.repository, user, Place(ref, "", "", ref_owner=owner))


def replaced(text: str, start: int, end: int, lines: list[str]) -> str:
    """`text` (LF line endings) with lines start..end replaced by `lines`; a file without a
    newline at its end stays so."""
    ends_with_newline = text.endswith("\n")
    body = text.split("\n")
    if ends_with_newline:
        body.pop()
    new = body[: start - 1] + lines + body[end:]
    return "\n".join(new) + ("\n" if new and ends_with_newline else "")


def _message(comment: Comment, user, host: str) -> str:
    message = f"Apply suggestion from {comment.author_name}\n"
    if comment.author is not None and comment.author.pk != user.pk:
        name, email = service.author_identity(comment.author, host)
        message += f"\nCo-authored-by: {name} <{email}>\n"
    return message


@transaction.atomic
def suggestion_apply(*, comment: Comment, user, expected_head: str | None = None, host: str = "") -> str:
    """Commit the comment's suggestion onto the proposal's ref; returns the new commit's id."""
    comment = (
        Comment.objects.select_for_update(of=("self",))
        .select_related("thread__revision", "author")
        .get(pk=comment.pk)
    )
    thread = comment.thread
    if thread is None:
        raise NotFound("That comment is not on lines of the diff.")
    proposal = thread.proposal
    require_reader(proposal, user)
    lines = suggestion_text(comment.body)
    if lines is None:
        raise InvalidInput("This comment suggests no change.", code="no_suggestion")
    if comment.suggestion_applied_sha:
        raise Conflict(
            f"This suggestion was applied already, as {comment.suggestion_applied_sha[:12]}.",
            code="already_applied",
        )
    if thread.side != Side.NEW:
        raise InvalidInput("Only suggestions on the new side can be applied.", code="old_side")
    if not proposal.is_open:
        raise Conflict(f"Proposal #{proposal.number} is {proposal.state}.", code="not_open")
    if not may_apply(user, proposal):
        raise Forbidden(
            "Only the proposal's author and those who may edit its workspace may apply suggestions."
        )
    latest = selectors.latest_revision(proposal)
    repo = proposal.repository
    if (
        latest is None
        or ref_map(repo.disk_path, proposal.source_ref).get(proposal.source_ref) != latest.head_sha
    ):
        raise Conflict(
            f"{proposal.source_ref} moved since its latest revision was recorded: reload and try again.",
            code="stale_head",
        )
    if expected_head and expected_head != latest.head_sha:
        raise Conflict(
            "The proposal has a newer revision than the page showed: reload it.", code="stale_head"
        )
    position = carry.positions(repo.disk_path, [thread], latest)[thread.pk]
    if not position.current:
        raise Conflict(
            "The lines this suggestion replaces changed since it was written (the thread is outdated).",
            code="outdated",
        )
    assert position.start is not None and position.end is not None
    raw = position.path.encode("utf-8", "surrogateescape")
    entry = trees.entries_at(repo.disk_path, latest.head_sha, [raw]).get(raw)
    found, decoded = files.describe(repo.disk_path, position.path, entry)
    if decoded is None or found.text is None or entry is None:
        code = "binary" if found.binary else "not_editable"
        raise InvalidInput(f"The suggestion cannot be applied: {found.reasons[0]}", code=code)
    text = replaced(found.text, position.start, position.end, lines)
    result = service.commit_changes(
        EditRequest(
            repository=repo,
            user=user,
            base_ref=proposal.source_ref,
            base_commit=latest.head_sha,
            changes=(FileChange("edit", position.path, text.encode("utf-8"), expected_blob=entry.oid),),
            message=_message(comment, user, host),
            target="workspace",
            name=proposal.source_ref,
            host=host,
        )
    )
    comment.suggestion_applied_sha = result.commit
    comment.save(update_fields=["suggestion_applied_sha"])
    return result.commit
