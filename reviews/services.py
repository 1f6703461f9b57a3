"""Writes for proposals: open, edit, comment, approve, close and reopen, and new revisions when
the proposed ref moves. One transaction each; errors are repos.errors with stable codes.
Merging lives in reviews.merge.

A proposal is part of its workspace: opening, editing, reopening and new revisions meet the
workspace's moderation flags as a push does (workspaces.selectors.write_refusal). A take-down
closes the workspace's open proposals (proposals_close_for_moderation)."""

from __future__ import annotations

import logging
import re

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from gitcore.git import is_valid_refname
from gitcore.gittools import is_ancestor, merge_base, rev_parse
from repos.errors import Conflict, Forbidden, InvalidInput, NotFound
from repos.hooks import refspace
from repos.models import Push, Repository
from repos.selectors import can_read, user_by_name
from repos.visibility import refuse_republishing
from reviews import events, selectors
from reviews.models import (
    COMMENT_MAX,
    DESCRIPTION_MAX,
    TITLE_MAX,
    Approval,
    ClosedReason,
    Comment,
    Proposal,
    ProposalRevision,
    ProposalState,
)
from workspaces.selectors import write_refusal

log = logging.getLogger(__name__)

# Text fields keep newlines and tabs; every other control character goes (NUL breaks
# PostgreSQL, the rest only hides things from reviewers).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_TITLE_CONTROL = re.compile(r"[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def clean_title(title) -> str:
    title = _TITLE_CONTROL.sub(" ", str(title or "")).strip()
    if not title:
        raise InvalidInput("A proposal needs a title.", fields={"title": ["required"]})
    if len(title) > TITLE_MAX:
        raise InvalidInput(f"The title is at most {TITLE_MAX} characters.", fields={"title": ["too_long"]})
    return title


def clean_text(text, *, limit: int, field: str) -> str:
    text = _CONTROL.sub("", str(text or "").replace("\r\n", "\n")).strip()
    if len(text) > limit:
        raise InvalidInput(f"The {field} is at most {limit} characters.", fields={field: ["too_long"]})
    return text


def _workspace_owner(ref: str) -> str | None:
    if not ref.startswith(refspace.WORKSPACES):
        return None
    owner, sep, rest = ref[len(refspace.WORKSPACES) :].partition("/")
    return owner if owner and sep and rest else None


def _require_writable(repo: Repository, source_ref: str, user, what: str) -> None:
    """Forbidden when the workspace holding `source_ref` refuses this user's writes (frozen for
    its owner, taken down for everyone, or a deactivated account)."""
    owner = _workspace_owner(source_ref)
    reason = write_refusal(repo, owner, actor=user, what=what) if owner else None
    if reason:
        raise Forbidden(reason, code="workspace_moderated")


def _require_open(proposal: Proposal) -> None:
    if proposal.state != ProposalState.OPEN:
        raise Conflict(f"Proposal #{proposal.number} is {proposal.state}.", code="not_open")


@transaction.atomic
def proposal_open(
    *,
    repo: Repository,
    user,
    source_ref: str,
    target_branch: str,
    title: str,
    description: str = "",
    push: Push | None = None,
) -> Proposal:
    """Propose a workspace ref (named, or a nameless head) for a target branch. Only the
    workspace's owner may, or a repository admin on their behalf."""
    if user is None or not user.is_authenticated:
        raise Forbidden("Sign in to propose changes.")
    if not can_read(user, repo):
        raise NotFound("Repository not found.")
    title = clean_title(title)
    description = clean_text(description, limit=DESCRIPTION_MAX, field="description")
    source_ref = str(source_ref or "").strip()
    if not source_ref.startswith("refs/"):
        source_ref = refspace.workspace_ref(user.username, source_ref)
    owner = _workspace_owner(source_ref)
    if owner is None or not is_valid_refname(source_ref):
        raise InvalidInput(
            f"Propose a workspace ref: {refspace.WORKSPACES}<you>/<name>.", fields={"source_ref": ["invalid"]}
        )
    if owner != user.username and not selectors.is_admin(user, repo):
        raise Forbidden(f"{source_ref} is in {owner}'s workspace; only they (or an admin) may propose it.")
    _require_writable(repo, source_ref, user, "opening a proposal")
    target_branch = str(target_branch or "").strip().removeprefix("refs/heads/")
    if not target_branch or not is_valid_refname(f"refs/heads/{target_branch}"):
        raise InvalidInput("Name an existing target branch.", fields={"target_branch": ["invalid"]})
    path = repo.disk_path
    head = rev_parse(path, source_ref)
    if head is None:
        raise InvalidInput(f"{source_ref} does not exist.", fields={"source_ref": ["missing"]})
    refuse_republishing(repo, user, [head])
    target = rev_parse(path, f"refs/heads/{target_branch}")
    if target is None:
        raise InvalidInput(f"There is no branch {target_branch!r}.", fields={"target_branch": ["missing"]})
    if is_ancestor(path, head, target):
        raise Conflict(
            f"{source_ref} has nothing that {target_branch} does not have.", code="nothing_to_propose"
        )
    base = merge_base(path, target, head)
    if base is None:
        raise Conflict(
            f"{source_ref} and {target_branch} have no history in common.", code="unrelated_histories"
        )
    if Proposal.objects.filter(repository=repo, source_ref=source_ref, state=ProposalState.OPEN).exists():
        raise Conflict(f"{source_ref} is already proposed.", code="already_proposed")
    author = user
    if owner != user.username:
        author = user_by_name(owner) or user
    # One proposal number at a time per repository: lock the repository's row.
    Repository.objects.select_for_update().filter(pk=repo.pk).first()
    number = (Proposal.objects.filter(repository=repo).aggregate(n=Max("number"))["n"] or 0) + 1
    try:
        with transaction.atomic():
            proposal = Proposal.objects.create(
                repository=repo,
                number=number,
                author=author,
                source_ref=source_ref,
                target_branch=target_branch,
                title=title,
                description=description,
            )
    except IntegrityError:
        raise Conflict("Another proposal was opened at the same moment; try again.", code="busy") from None
    ProposalRevision.objects.create(proposal=proposal, number=1, head_sha=head, base_sha=base, push=push)
    events.proposal_opened(proposal, actor=user)
    return proposal


@transaction.atomic
def proposal_edit(
    *, proposal: Proposal, user, title: str | None = None, description: str | None = None
) -> Proposal:
    if not selectors.may_edit(user, proposal):
        raise Forbidden("Only the proposal's author and the repository's maintainers may edit it.")
    _require_writable(proposal.repository, proposal.source_ref, user, "editing its proposals")
    if title is not None:
        proposal.title = clean_title(title)
    if description is not None:
        proposal.description = clean_text(description, limit=DESCRIPTION_MAX, field="description")
    proposal.save(update_fields=["title", "description", "updated_at"])
    return proposal


@transaction.atomic
def comment_add(*, proposal: Proposal, user, body: str) -> Comment:
    if user is None or not user.is_authenticated:
        raise Forbidden("Sign in to comment.")
    if not can_read(user, proposal.repository):
        raise NotFound("Proposal not found.")
    body = clean_text(body, limit=COMMENT_MAX, field="body")
    if not body:
        raise InvalidInput("A comment needs some text.", fields={"body": ["required"]})
    comment = Comment.objects.create(
        proposal=proposal,
        author=user,
        author_name=user.username,
        body=body,
        revision=selectors.latest_revision(proposal),
    )
    events.comment_added(comment, actor=user)
    return comment


@transaction.atomic
def proposal_approve(*, proposal: Proposal, user) -> Approval:
    """Approve the current revision. Approving again after a new push moves the approval."""
    if proposal.author_id == getattr(user, "pk", None):
        raise Forbidden("You cannot approve your own proposal.")
    if not selectors.may_approve(user, proposal):
        raise Forbidden("Only the repository's maintainers and admins may approve.")
    _require_open(proposal)
    revision = selectors.latest_revision(proposal)
    if revision is None:
        raise Conflict("The proposal has no revision to approve.", code="no_revision")
    approval, _ = Approval.objects.update_or_create(
        proposal=proposal, user=user, defaults={"revision": revision, "head_sha": revision.head_sha}
    )
    events.approved(approval, actor=user)
    return approval


@transaction.atomic
def proposal_close(*, proposal: Proposal, user) -> Proposal:
    if not selectors.may_edit(user, proposal):
        raise Forbidden("Only the proposal's author and the repository's maintainers may close it.")
    _require_open(proposal)
    proposal.state = ProposalState.CLOSED
    proposal.save(update_fields=["state", "updated_at"])
    return proposal


@transaction.atomic
def proposal_reopen(*, proposal: Proposal, user) -> Proposal:
    if not selectors.may_edit(user, proposal):
        raise Forbidden("Only the proposal's author and the repository's maintainers may reopen it.")
    if proposal.state != ProposalState.CLOSED:
        raise Conflict(f"Proposal #{proposal.number} is {proposal.state}.", code="not_closed")
    _require_writable(proposal.repository, proposal.source_ref, user, "reopening its proposals")
    if Proposal.objects.filter(
        repository=proposal.repository, source_ref=proposal.source_ref, state=ProposalState.OPEN
    ).exists():
        raise Conflict(
            f"{proposal.source_ref} is proposed again in another open proposal.", code="already_proposed"
        )
    proposal.state = ProposalState.OPEN
    proposal.closed_reason = ""  # the moderation note stays, as history
    proposal.save(update_fields=["state", "closed_reason", "updated_at"])
    return proposal


@transaction.atomic
def revision_record(*, proposal: Proposal, head: str, push: Push | None = None) -> ProposalRevision | None:
    """A new revision if the proposed ref now points somewhere else; None if it does not, or
    if the workspace refuses the pusher's writes: such a push is refused by the policy, and one
    that landed anyway (an admin's, into a taken-down workspace) is not followed."""
    owner = _workspace_owner(proposal.source_ref)
    pusher = push.pusher if push is not None else None
    refusal = owner and write_refusal(proposal.repository, owner, actor=pusher, what="updating its proposals")
    if refusal:
        log.info("proposal %s does not follow push %s: %s", proposal.pk, getattr(push, "pk", None), refusal)
        return None
    latest = selectors.latest_revision(proposal)
    if latest is not None and latest.head_sha == head:
        return None
    path = proposal.repository.disk_path
    target = rev_parse(path, f"refs/heads/{proposal.target_branch}")
    base = (merge_base(path, target, head) if target else None) or (latest.base_sha if latest else head)
    return ProposalRevision.objects.create(
        proposal=proposal,
        number=(latest.number + 1) if latest else 1,
        head_sha=head,
        base_sha=base,
        push=push,
    )


@transaction.atomic
def proposals_close_for_moderation(*, repo: Repository, username: str, note: str) -> list[int]:
    """Close every open proposal of `username`'s workspace, noting why (shown to maintainers,
    admins and staff). Runs inside the take-down's transaction; returns the numbers closed."""
    rows = list(
        Proposal.objects.select_for_update()
        .filter(
            repository=repo,
            state=ProposalState.OPEN,
            source_ref__startswith=refspace.workspace_prefix(username),
        )
        .order_by("number")
    )
    for proposal in rows:
        proposal.state = ProposalState.CLOSED
        proposal.closed_reason = ClosedReason.MODERATION
        proposal.moderation_note = note
        proposal.save(update_fields=["state", "closed_reason", "moderation_note", "updated_at"])
    return [p.number for p in rows]


@transaction.atomic
def proposal_mark_merged(*, proposal: Proposal, push: Push | None, sha: str) -> None:
    """The proposal's work reached its target through a push (not the merge button)."""
    changed = Proposal.objects.filter(pk=proposal.pk, state=ProposalState.OPEN).update(
        state=ProposalState.MERGED,
        merged_by=push.pusher if push else None,
        merged_at=timezone.now(),
        merge_push=push,
        merged_sha=sha,
        updated_at=timezone.now(),
    )
    if changed:
        events.merged(proposal, actor=push.pusher if push else None)
