"""Repository maintenance, in place of git's automatic gc.

A full repack with a reachability bitmap (clones and fetches count objects from the bitmap
instead of walking history) plus a commit-graph (history walks read it instead of parsing
commits). Unreachable objects go to a cruft pack rather than being dropped: nothing pushed
is deleted by maintenance.

One run at a time per repository, claimed with a conditional UPDATE (Zulip's pattern): a
second worker that loses the race returns at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from repos.git import run_git
from repos.locking import repository_lock
from repos.models import Repository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MaintenanceResult:
    ran: bool
    reason: str = ""


def _claim(repo_id: int) -> bool:
    now = timezone.now()
    stale = now - settings.MAINTENANCE_STALE_CLAIM
    claimed = (
        Repository.objects.filter(pk=repo_id)
        .filter(Q(maintenance_claimed_at__isnull=True) | Q(maintenance_claimed_at__lt=stale))
        .update(maintenance_claimed_at=now)
    )
    return claimed == 1


def maintain_repository(repo: Repository) -> MaintenanceResult:
    if not _claim(repo.pk):
        return MaintenanceResult(False, "another maintenance run holds this repository")
    pushes_seen = repo.pushes_since_maintenance
    try:
        path = repo.disk_path
        # Not while a merge or a cleanup moves refs (repos.locking); they wait for the repack.
        with repository_lock(repo.pk, purpose="maintenance", timeout=settings.GIT_TIMEOUT):
            run_git(["repack", "-a", "-d", "-b", "--cruft", "--quiet"], repo=path)
            run_git(["commit-graph", "write", "--reachable", "--changed-paths"], repo=path)
    except Exception:
        Repository.objects.filter(pk=repo.pk).update(maintenance_claimed_at=None)
        raise
    Repository.objects.filter(pk=repo.pk).update(
        maintenance_claimed_at=None,
        last_maintained_at=timezone.now(),
        # Pushes that arrived during the run still count toward the next one.
        pushes_since_maintenance=F("pushes_since_maintenance") - pushes_seen,
    )
    log.info("maintained %s (%s)", repo.full_name, path)
    return MaintenanceResult(True)


def repositories_due_for_maintenance():
    """Repositories with pushes since their last run, or never maintained, or not for a while."""
    cutoff = timezone.now() - settings.MAINTENANCE_INTERVAL
    return Repository.objects.filter(maintenance_claimed_at__isnull=True, deleted_at__isnull=True).filter(
        Q(last_maintained_at__isnull=True)
        | Q(pushes_since_maintenance__gt=0, last_maintained_at__lt=cutoff)
    )
