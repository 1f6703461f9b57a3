"""Proposals follow pushes, archived refs, new revisions, approvals and commit statuses: each
event only enqueues a task (reviews.tasks), once its transaction commits; the git and database
work runs in a worker. One exception: a new revision switches auto-merge off (when pushed by
someone else) in its own transaction, so no attempt can merge it first."""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from repos.signals import commit_status_changed, push_recorded
from reviews import automerge, tasks
from reviews.models import Approval, Proposal, ProposalRevision
from workspaces.signals import workspace_ref_archived


@receiver(push_recorded)
def follow_push(sender, push_id: int, **_kwargs) -> None:
    transaction.on_commit(lambda: tasks.follow_push.delay(push_id))


@receiver(workspace_ref_archived)
def follow_archive(
    sender, repository_id: int, ref: str, sha: str, push_id: int | None = None, **_kwargs
) -> None:
    transaction.on_commit(lambda: tasks.follow_archive.delay(repository_id, ref, sha, push_id))


@receiver(post_save, sender=ProposalRevision)
def follow_revision(sender, instance: ProposalRevision, created: bool, **_kwargs) -> None:
    if not created:
        return
    automerge.cancel_for_revision(instance)
    transaction.on_commit(lambda: tasks.proposal_revised.delay(instance.pk))


@receiver(post_save, sender=Approval)
def follow_approval(sender, instance: Approval, **_kwargs) -> None:
    proposal_id = instance.proposal_id
    if Proposal.objects.filter(pk=proposal_id).exclude(auto_merge_strategy="").exists():
        transaction.on_commit(lambda: tasks.auto_merge.delay(proposal_id))


@receiver(commit_status_changed)
def follow_status(sender, repository_id: int, sha: str, context: str, state: str, **_kwargs) -> None:
    transaction.on_commit(lambda: tasks.follow_status.delay(repository_id, sha, context, state))
