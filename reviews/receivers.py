"""Proposals follow pushes, archived refs, new revisions, approvals and commit statuses: each
event only enqueues a task (reviews.tasks), once its transaction commits; the git and database
work runs in a worker. One exception: a new revision switches auto-merge off (when pushed by
someone else) in its own transaction, so no attempt can merge it first."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from repos import enqueue
from repos.signals import commit_status_changed, push_recorded
from reviews import automerge
from reviews.models import Approval, Proposal, ProposalRevision
from workspaces.signals import workspace_ref_archived, workspace_refs_renamed


@receiver(push_recorded)
def follow_push(sender, push_id: int, **_kwargs) -> None:
    enqueue.after_commit("reviews.tasks.follow_push", push_id)


@receiver(workspace_ref_archived)
def follow_archive(
    sender, repository_id: int, ref: str, sha: str, push_id: int | None = None, **_kwargs
) -> None:
    enqueue.after_commit("reviews.tasks.follow_archive", repository_id, ref, sha, push_id)


@receiver(workspace_refs_renamed)
def follow_renames(sender, repository_id: int, renames: dict[str, str], **_kwargs) -> None:
    # In the renaming transaction: a proposal never names a ref that no longer exists.
    for old, new in renames.items():
        Proposal.objects.filter(repository_id=repository_id, source_ref=old).update(source_ref=new)


@receiver(post_save, sender=ProposalRevision)
def follow_revision(sender, instance: ProposalRevision, created: bool, **_kwargs) -> None:
    if not created:
        return
    automerge.cancel_for_revision(instance)
    enqueue.after_commit("reviews.tasks.proposal_revised", instance.pk)


@receiver(post_save, sender=Approval)
def follow_approval(sender, instance: Approval, **_kwargs) -> None:
    proposal_id = instance.proposal_id
    if Proposal.objects.filter(pk=proposal_id).exclude(auto_merge_strategy="").exists():
        enqueue.after_commit("reviews.tasks.auto_merge", proposal_id)


@receiver(commit_status_changed)
def follow_status(sender, repository_id: int, sha: str, context: str, state: str, **_kwargs) -> None:
    enqueue.after_commit("reviews.tasks.follow_status", repository_id, sha, context, state)
