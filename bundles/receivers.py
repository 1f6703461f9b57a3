"""Bundles follow pushes to canonical refs and visibility changes: each receiver only enqueues
a task (bundles.tasks) once its transaction commits, never building in the push itself."""

from __future__ import annotations

from django.dispatch import receiver

from bundles import services
from repos import enqueue
from repos.signals import push_recorded, repository_purging, visibility_changed


@receiver(push_recorded)
def build_after_push(sender, push_id: int, **_kwargs) -> None:
    enqueue.after_commit("bundles.tasks.follow_push", push_id)


@receiver(visibility_changed)
def move_after_visibility_change(sender, repository_id: int, **_kwargs) -> None:
    enqueue.after_commit("bundles.tasks.follow_visibility_change", repository_id)


@receiver(repository_purging)
def delete_bundles_of_purged_repository(sender, repository, **_kwargs) -> None:
    # Inside the purge, before the repository's row goes: a failure here stops this purge.
    services.bundles_repository_purged(repo=repository)
