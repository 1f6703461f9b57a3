"""Keep the index in step with the rest of the site. Pushes and moderation only enqueue tasks
that take ids (search.tasks), like every receiver of those signals; saved rows update their
one prose row where they are saved."""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from repos import enqueue
from repos.models import Repository, User
from repos.signals import push_recorded, repository_purging, visibility_changed
from reviews.models import Proposal
from search import documents
from search.indexing import index_reset
from search.models import IndexState
from workspaces.moderation import workspace_taken_down
from workspaces.signals import workspace_moderated


@receiver(push_recorded)
def after_push(sender, repository_id: int, **_kwargs) -> None:
    # A push to a workspace changes nothing indexed; one run checks the branches cheaply.
    enqueue.after_commit("search.tasks.update_index", repository_id)


@receiver(visibility_changed)
def after_visibility_change(sender, repository_id: int, **_kwargs) -> None:
    # Rows are filtered by visibility when queried, so nothing is removed; a repository
    # made public may never have been indexed, though (a mirror), so it is brought up to date.
    enqueue.after_commit("search.tasks.update_index", repository_id)


@receiver(post_save, sender=Repository)
def after_repository_saved(sender, instance: Repository, created: bool, **_kwargs) -> None:
    documents.sync_repository(instance)
    if created:
        return
    repo_id, branch = instance.pk, instance.default_branch
    # A new default branch means other files: the task compares it with the indexed one.
    transaction.on_commit(lambda: _if_branch_changed(repo_id, branch))


def _if_branch_changed(repo_id: int, branch: str) -> None:
    indexed = IndexState.objects.filter(repository_id=repo_id).values_list("code_branch", flat=True).first()
    if indexed is not None and indexed != branch:
        enqueue.send("search.tasks.update_index", repo_id)


@receiver(post_save, sender=User)
def after_user_saved(sender, instance: User, update_fields=None, **_kwargs) -> None:
    if update_fields is not None and set(update_fields) <= {"last_login", "password"}:
        return
    documents.sync_user(instance)


@receiver(post_save, sender=Proposal)
def after_proposal_saved(sender, instance: Proposal, **_kwargs) -> None:
    documents.sync_proposal(instance)


@receiver(repository_purging)
def before_purge(sender, repository: Repository, **_kwargs) -> None:
    # The rows would go with the repository's row (CASCADE); deleting them first, in bulk,
    # keeps the purge's own delete small.
    index_reset(repo=repository)


@receiver(workspace_taken_down)
def on_take_down(sender, workspace, **_kwargs) -> list:
    """Inside the take-down's transaction: its proposals leave the index with it."""
    documents.forget_proposals_of(repo_id=workspace.repository_id, username=workspace.user.username)
    return []


@receiver(workspace_moderated)
def after_moderation(sender, repository_id: int, **_kwargs) -> None:
    enqueue.send("search.tasks.follow_moderation", repository_id)
