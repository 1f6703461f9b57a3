"""Proposals follow pushes: a push that moves a proposed ref adds a revision, a nameless push
with `-o title=... [-o description=...]` opens a proposal (or retitles the open one), a plain
git merge of a proposal's head into its target merges it, and merged-ref cleanup archiving a
proposed ref marks its proposal merged. Run by reviews.tasks, never in the push's response."""

from __future__ import annotations

import logging
import re

from gitcore.gittools import is_ancestor
from repos.errors import ServiceError
from repos.hooks import refspace
from repos.hooks.updates import is_zero
from repos.models import Push
from reviews import services
from reviews.models import DESCRIPTION_MAX, TITLE_MAX, Proposal, ProposalState
from reviews.selectors import latest_revision
from workspaces.models import ArchivedRef

log = logging.getLogger(__name__)


def options_of(push: Push) -> dict[str, str]:
    """The last value of each option key a proposal reads (title, description)."""
    values: dict[str, str] = {}
    for option in push.push_options or []:
        key, sep, value = str(option).partition("=")
        if sep and key in ("title", "description"):
            values[key] = value
    return values


_ESCAPE = re.compile(r"\\(.)")


def unescape_option(value: str) -> str:
    """A push option holds no newline, so `-o description=` spells one `\\n`, and a backslash
    `\\\\`; any other backslash stays as typed. A newline read this way is a line break on the
    page (reviews.views renders descriptions with hard breaks)."""
    return _ESCAPE.sub(
        lambda m: "\n" if m.group(1) == "n" else "\\" if m.group(1) == "\\" else m.group(0), value
    )


def targets_of(push: Push) -> dict[str, str]:
    """`hostsite.for` lines (written by proc-receive, never by a client): workspace ref -> branch."""
    targets = {}
    for option in push.push_options or []:
        if str(option).startswith("hostsite.for="):
            ref, _, branch = str(option)[len("hostsite.for=") :].partition(" ")
            if ref and branch:
                targets[ref] = branch
    return targets


def proposals_follow_push(*, push: Push) -> None:
    updates = [u for u in push.ref_updates.all() if not is_zero(u.new)]
    branches = {u.ref[len("refs/heads/") :]: u.new for u in updates if u.ref.startswith("refs/heads/")}
    if branches:
        _merged_by_push(push, branches)
    moved = {u.ref: u.new for u in updates if u.ref.startswith(refspace.WORKSPACES)}
    if not moved:
        return
    # A deleted ref leaves its proposal at the last revision; merged ones are history.
    for proposal in (
        Proposal.objects.filter(repository_id=push.repository_id, source_ref__in=list(moved))
        .exclude(state=ProposalState.MERGED)
        .select_related("repository")
    ):
        services.revision_record(proposal=proposal, head=moved[proposal.source_ref], push=push)
    wanted = options_of(push)
    if wanted and push.pusher is not None:
        _propose_from_options(push, moved, wanted)


def proposals_follow_archive(*, repository_id: int, ref: str, sha: str, push: Push | None) -> None:
    """Merged-ref cleanup archived a proposed ref because its work landed (also by rebase or
    squash, found by patch-id): the proposal at that head is merged, by the push that landed it."""
    archived = (
        ArchivedRef.objects.filter(repository_id=repository_id, ref=ref, sha=sha).order_by("-id").first()
    )
    for proposal in Proposal.objects.filter(
        repository_id=repository_id, source_ref=ref, state=ProposalState.OPEN
    ):
        latest = proposal.revisions.order_by("-number").first()
        if latest is None or latest.head_sha != sha:
            continue
        if archived is not None and archived.branch != proposal.target_branch:
            continue
        landed = ""
        if push is not None:
            landed = (
                push.ref_updates.filter(ref=f"refs/heads/{proposal.target_branch}")
                .values_list("new", flat=True)
                .first()
                or ""
            )
        services.proposal_mark_merged(proposal=proposal, push=push, sha=landed)


def _merged_by_push(push: Push, branches: dict[str, str]) -> None:
    """A maintainer who merges a proposal with plain git (its head now in the target) merged it."""
    path = push.repository.disk_path
    for proposal in Proposal.objects.filter(
        repository=push.repository, state=ProposalState.OPEN, target_branch__in=list(branches)
    ):
        latest = latest_revision(proposal)
        if latest is not None and is_ancestor(path, latest.head_sha, branches[proposal.target_branch]):
            services.proposal_mark_merged(proposal=proposal, push=push, sha=branches[proposal.target_branch])


def _propose_from_options(push: Push, moved: dict[str, str], wanted: dict[str, str]) -> None:
    """Open (or update) the proposal for each ref a nameless push created or advanced. Push
    options cannot be refused after the fact, so over-long text is cut, not rejected."""
    title = wanted.get("title", "")[:TITLE_MAX]
    description = wanted.get("description")
    if push.pusher is None:  # options come with a signed-in push only
        return
    if description is not None:
        description = unescape_option(description)[:DESCRIPTION_MAX]
    for ref, branch in targets_of(push).items():
        if ref not in moved or not ref.startswith(refspace.workspace_prefix(push.pusher.username)):
            continue
        try:
            existing = Proposal.objects.filter(
                repository=push.repository, source_ref=ref, state=ProposalState.OPEN
            ).first()
            if existing is not None:
                services.proposal_edit(
                    proposal=existing, user=push.pusher, title=title or None, description=description
                )
            elif title:
                services.proposal_open(
                    repo=push.repository,
                    user=push.pusher,
                    source_ref=ref,
                    target_branch=branch,
                    title=title,
                    description=description or "",
                    push=push,
                )
        except ServiceError as exc:
            log.info("push %s: no proposal for %s: %s", push.pk, ref, exc.message)
