"""Builds follow pushes to canonical refs, debounced, never in the push itself; a visibility
change moves the repository's bundles to the other storage area."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.dispatch import receiver

from repos.models import RefUpdate, Repository
from repos.signals import push_recorded, repository_purging, visibility_changed

log = logging.getLogger(__name__)
CANONICAL_PREFIXES = ("refs/heads/", "refs/tags/")


@receiver(push_recorded)
def build_after_push(sender, push_id: int, repository_id: int, **_kwargs) -> None:
    refs = RefUpdate.objects.filter(push_id=push_id).values_list("ref", flat=True)
    if not any(ref.startswith(CANONICAL_PREFIXES) for ref in refs):
        return  # workspaces only: bundles never carry them
    from bundles.tasks import build_bundles

    try:
        # The countdown lets a burst of pushes share one build: each task skips itself if a
        # build started after its push (bundles.services._covered_by_later_build).
        build_bundles.apply_async((repository_id, time.time()), countdown=settings.BUNDLE_DEBOUNCE_SECONDS)
    except Exception:
        # The push has been accepted; a broker outage only delays bundles until the next push.
        log.exception("could not enqueue a bundle build for repository %s", repository_id)


@receiver(visibility_changed)
def move_after_visibility_change(sender, repository_id: int, **_kwargs) -> None:
    repo = Repository.objects.filter(pk=repository_id).select_related("owner").first()
    if repo is None:
        return
    from bundles.services import bundles_visibility_changed

    bundles_visibility_changed(repo=repo)


@receiver(repository_purging)
def delete_bundles_of_purged_repository(sender, repository, **_kwargs) -> None:
    from bundles.services import bundles_repository_purged

    bundles_repository_purged(repo=repository)
