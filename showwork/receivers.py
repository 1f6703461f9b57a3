"""Cached Work graphs go stale when refs move or a proposal changes (showwork.cache). Ref moves
(pushes, merges through the web, which are recorded as pushes, archived workspace refs) only
enqueue the bump (showwork.tasks), like every receiver of those signals."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from repos import enqueue
from repos.signals import push_recorded
from reviews.models import Proposal
from showwork import cache
from workspaces.signals import workspace_ref_archived


@receiver(push_recorded)
def after_push(sender, repository_id: int, **_kwargs) -> None:
    enqueue.after_commit("showwork.tasks.forget_graphs", repository_id)


@receiver(workspace_ref_archived)
def after_archive(sender, repository_id: int, **_kwargs) -> None:
    enqueue.after_commit("showwork.tasks.forget_graphs", repository_id)


@receiver([post_save, post_delete], sender=Proposal)
def after_proposal_change(sender, instance: Proposal, **_kwargs) -> None:
    # A node with an open proposal links to it; opening, closing and merging change that. A
    # model signal, sent where the proposal is saved (a task or a page's action): the bump is
    # one cache write, so it is made there.
    cache.bump(instance.repository_id)
