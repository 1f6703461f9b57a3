"""Keeps Workspace rows (moderation state, last push) in step with pushes."""

from __future__ import annotations

from django.dispatch import receiver

from repos.models import Push, RefUpdate, User
from repos.signals import push_recorded, repository_deleted, repository_purging
from workspaces.models import Workspace


@receiver(push_recorded)
def after_push(sender, push_id: int, repository_id: int, **_kwargs) -> None:
    """After a push: its users' Workspace rows (last push); then a task indexes a workspace
    push by patch-id, and one cleans up after a branch moved (workspaces.cleanup). The ref
    updates are read once, here, on the push's way out."""
    from workspaces import tasks

    push = Push.objects.filter(pk=push_id).values_list("created_at", flat=True).first()
    if push is None:
        return
    updates = list(RefUpdate.objects.filter(push_id=push_id).values_list("ref", "new"))
    names = {ref.split("/", 3)[2] for ref, _new in updates if ref.startswith("refs/users/")}
    for user in User.objects.filter(username__in=names):
        Workspace.objects.update_or_create(
            repository_id=repository_id, user=user, defaults={"last_push_at": push}
        )
    if names:
        tasks.index_workspace_push.delay(push_id)
    if any(ref.startswith("refs/heads/") and set(new) != {"0"} for ref, new in updates):
        tasks.cleanup_after_push.delay(push_id)


@receiver(repository_deleted)
def tell_contributors(sender, repository_id: int, **_kwargs) -> None:
    """Contributors with unmerged work learn of the deletion (and of the export) from a task:
    finding them runs git."""
    import logging

    from workspaces import tasks

    try:
        tasks.notify_deleted_repository_contributors.delay(repository_id)
    except Exception:
        # The deletion stands; a broker outage only loses the notice (the exports page still lists it).
        logging.getLogger(__name__).exception(
            "could not enqueue notices for deleted repository %s", repository_id
        )


@receiver(repository_purging)
def drop_exports(sender, repository, **_kwargs) -> None:
    from workspaces import exports

    exports.exports_purge(repository)
