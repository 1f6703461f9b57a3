"""Merge when ready: a maintainer chooses a strategy, and the proposal merges by itself, as
them, once the branch's rules are met and git merges it cleanly.

Attempts run in a worker (reviews.tasks.auto_merge) after whatever can make a proposal ready:
a new revision's merge check, an approval, a commit status on its head, a move of its target.
The merge is reviews.merge.proposal_merge as `auto_merge_by`, so their permission (maintainer,
not banned) is checked at that moment; if they lost it, auto-merge is switched off.

A new revision pushed by anyone but the person who turned it on switches it off (GitHub keeps
it, but then code nobody chose to merge could land on its own when no approval is required);
their own pushes keep it.
"""

from __future__ import annotations

import logging

from django.db import transaction

from repos import enqueue
from repos.errors import Conflict, Forbidden, InvalidInput, ServiceError
from repos.models import Push
from reviews import merge, mergecheck, rules
from reviews.models import MergeCheck, MergeStrategy, Proposal, ProposalRevision, ProposalState
from reviews.selectors import may_edit

log = logging.getLogger(__name__)


@transaction.atomic
def auto_merge_enable(*, proposal: Proposal, user, strategy: str) -> Proposal:
    if not merge.may_merge(user, proposal.repository):
        raise Forbidden("Only the repository's maintainers and admins may merge.")
    if strategy not in MergeStrategy.values:
        raise InvalidInput(
            f"Unknown merge strategy {str(strategy)[:20]!r}; use merge, ff, rebase or squash.",
            fields={"strategy": ["invalid"]},
        )
    if proposal.state != ProposalState.OPEN:
        raise Conflict(f"Proposal #{proposal.number} is {proposal.state}.", code="not_open")
    Proposal.objects.filter(pk=proposal.pk).update(auto_merge_strategy=strategy, auto_merge_by=user)
    proposal.refresh_from_db()
    enqueue.after_commit("reviews.tasks.auto_merge", proposal.pk)
    return proposal


@transaction.atomic
def auto_merge_cancel(*, proposal: Proposal, user) -> Proposal:
    if not (merge.may_merge(user, proposal.repository) or may_edit(user, proposal)):
        raise Forbidden("Only the repository's maintainers and the proposal's author may cancel auto-merge.")
    Proposal.objects.filter(pk=proposal.pk).update(auto_merge_strategy="", auto_merge_by=None)
    proposal.refresh_from_db()
    return proposal


def cancel_for_revision(revision: ProposalRevision) -> None:
    """A new revision by someone else switches auto-merge off (module docstring). Runs in the
    transaction that records the revision, so no attempt can merge it first."""
    pusher_id = (
        Push.objects.filter(pk=revision.push_id).values_list("pusher_id", flat=True).first()
        if revision.push_id is not None
        else None
    )
    Proposal.objects.filter(pk=revision.proposal_id).exclude(auto_merge_strategy="").exclude(
        auto_merge_by_id=pusher_id
    ).update(auto_merge_strategy="", auto_merge_by=None)


def try_auto_merge(proposal: Proposal) -> str:
    """Merge if auto-merge is on and everything is ready; a word saying what happened."""
    if proposal.state != ProposalState.OPEN or not proposal.auto_merge_strategy:
        return "off"
    user = proposal.auto_merge_by
    if user is None or not merge.may_merge(user, proposal.repository):
        Proposal.objects.filter(pk=proposal.pk).update(auto_merge_strategy="", auto_merge_by=None)
        return "cancelled"
    if not rules.evaluate(proposal).ok:
        return "waiting"
    check = mergecheck.check_proposal(proposal)
    if check is None or check.state != MergeCheck.State.CLEAN:
        return "waiting"
    try:
        merge.proposal_merge(
            proposal=proposal, user=user, strategy=proposal.auto_merge_strategy, expected_head=check.head_sha
        )
    except Forbidden:
        Proposal.objects.filter(pk=proposal.pk).update(auto_merge_strategy="", auto_merge_by=None)
        return "cancelled"
    except ServiceError as exc:  # conflicts, a fast-forward that cannot be, the head moved
        log.info("auto-merge of proposal %s waits: %s", proposal.pk, exc.message)
        return "waiting"
    return "merged"
