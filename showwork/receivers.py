"""Cached Work graphs go stale when refs move or a proposal changes (showwork.cache)."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from repos.signals import push_recorded
from reviews.models import Proposal
from showwork import cache
from workspaces.signals import workspace_ref_archived


@receiver(push_recorded)
def after_push(sender, repository_id: int, **_kwargs) -> None:
    # Pushes, and merges through the web (recorded as pushes).
    cache.bump(repository_id)


@receiver(workspace_ref_archived)
def after_archive(sender, repository_id: int, **_kwargs) -> None:
    cache.bump(repository_id)


@receiver([post_save, post_delete], sender=Proposal)
def after_proposal_change(sender, instance: Proposal, **_kwargs) -> None:
    # A node with an open proposal links to it; opening, closing and merging change that.
    cache.bump(instance.repository_id)
