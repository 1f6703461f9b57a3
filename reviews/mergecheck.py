"""Whether git can merge a proposal: computed in a worker (reviews.tasks.check_merges) after a
push moves the proposal's ref or its target branch, and cached in MergeCheck for that
(target tip, proposal tip) pair. Pages read the row and, when it is for another pair, say
"checking" and enqueue the task: a page never runs a merge itself.

Per proposal: one `git rev-list --left-right --count` (behind / ahead) and, unless the proposal
is already in the target, one `git merge-tree --write-tree` (conflicting files, no working
tree, nothing written but objects). When a target moves, all its open proposals are checked in
one task, holding no lock: each row is written for the pair it was computed on, so a later
push only makes it look stale, never wrong.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from gitcore.git import GitError, run_git
from gitcore.gittools import rev_parse
from repos.errors import Conflict
from reviews import events
from reviews.mergetree import MergeConflict, merge_trees
from reviews.models import MergeCheck, Proposal, ProposalRevision, ProposalState
from reviews.selectors import latest_revision

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Pair:
    target_sha: str
    head_sha: str


def current_pair(proposal: Proposal, head_sha: str | None = None) -> Pair | None:
    """The (target tip, latest head) the proposal would merge now, or None (no branch, no head)."""
    if head_sha is None:
        latest = latest_revision(proposal)
        head_sha = latest.head_sha if latest else None
    target = rev_parse(proposal.repository.disk_path, f"refs/heads/{proposal.target_branch}")
    if not target or not head_sha:
        return None
    return Pair(target, head_sha)


def cached(proposal: Proposal, pair: Pair | None) -> MergeCheck | None:
    """The stored check if it is for `pair`; None: not known yet."""
    if pair is None:
        return None
    check = MergeCheck.objects.filter(proposal=proposal).first()
    if check is None or (check.target_sha, check.head_sha) != (pair.target_sha, pair.head_sha):
        return None
    return check


def _counts(path, pair: Pair) -> tuple[int, int]:
    """(behind, ahead): target commits the head lacks, head commits the target lacks."""
    out = run_git(
        ["rev-list", "--left-right", "--count", f"{pair.target_sha}...{pair.head_sha}", "--"], repo=path
    ).text.split()
    return int(out[0]), int(out[1])


def _compute(path, pair: Pair) -> dict:
    try:
        behind, ahead = _counts(path, pair)
        if ahead == 0:
            return {"state": MergeCheck.State.CLEAN, "behind": behind, "detail": "already in the target"}
        merge_trees(path, pair.target_sha, pair.head_sha, "Merging")
        return {"state": MergeCheck.State.CLEAN, "behind": behind}
    except MergeConflict as exc:
        return {"state": MergeCheck.State.CONFLICTS, "conflicts": exc.files[:500], "behind": behind}
    except Conflict as exc:  # unrelated histories
        return {"state": MergeCheck.State.ERROR, "detail": exc.message[:500]}
    except GitError as exc:
        log.warning("merge check of %s failed: %s", pair, exc)
        return {"state": MergeCheck.State.ERROR, "detail": "git could not compute the merge"}


def check_proposal(proposal: Proposal, pair: Pair | None = None) -> MergeCheck | None:
    """Compute and store the check for the proposal's current pair (skipped when stored
    already); tells the author when a clean proposal starts conflicting."""
    if proposal.state != ProposalState.OPEN:
        return None
    pair = pair or current_pair(proposal)
    if pair is None:
        return None
    previous = MergeCheck.objects.filter(proposal=proposal).first()
    if previous is not None and (previous.target_sha, previous.head_sha) == (pair.target_sha, pair.head_sha):
        return previous
    values = {"conflicts": [], "behind": 0, "detail": "", **_compute(proposal.repository.disk_path, pair)}
    defaults = {"target_sha": pair.target_sha, "head_sha": pair.head_sha, **values}
    try:
        with transaction.atomic():
            check, _ = MergeCheck.objects.update_or_create(proposal=proposal, defaults=defaults)
    except IntegrityError:  # another worker created the row meanwhile: the same answer, or newer
        return MergeCheck.objects.filter(proposal=proposal).first()
    if (
        check.state == MergeCheck.State.CONFLICTS
        and previous is not None
        and previous.state == MergeCheck.State.CLEAN
    ):
        events.conflict_appeared(proposal, files=list(check.conflicts))
    return check


def check_target(repository_id: int, branch: str) -> int:
    """Check every open proposal into `branch` against its current tip; returns how many."""
    proposals = list(
        Proposal.objects.filter(
            repository_id=repository_id, target_branch=branch, state=ProposalState.OPEN
        ).select_related("repository")
    )
    if not proposals:
        return 0
    target = rev_parse(proposals[0].repository.disk_path, f"refs/heads/{branch}")
    if target is None:
        return 0
    heads = _latest_heads([p.pk for p in proposals])
    for proposal in proposals:
        head = heads.get(proposal.pk)
        if head:
            check_proposal(proposal, Pair(target, head))
    return len(proposals)


def _latest_heads(proposal_ids: list[int]) -> dict[int, str]:
    heads: dict[int, str] = {}
    for pk, head in (
        ProposalRevision.objects.filter(proposal_id__in=proposal_ids)
        .order_by("proposal_id", "number")
        .values_list("proposal_id", "head_sha")
    ):
        heads[pk] = head  # ordered by number: the last one wins
    return heads
