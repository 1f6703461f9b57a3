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


def delta_ratio(path) -> float | None:
    """The share of trees and blobs stored as deltas (None for a repository without any): a
    pack written without a delta search, as some hosts serve them, has almost none."""
    out = run_git(["cat-file", "--batch-all-objects", "--batch-check=%(objecttype) %(deltabase)"], repo=path,
                  timeout=settings.GIT_IMPORT_TIMEOUT).stdout
    total = deltas = 0
    for line in out.splitlines():
        kind, _, base = line.partition(b" ")
        if kind in (b"tree", b"blob"):
            total += 1
            deltas += base.strip(b"0") != b""
    return deltas / total if total else None


def repack_fresh(repo: Repository) -> None:
    """A full repack with a fresh delta search, for history that arrived packed by someone else
    (an import, a large mirror sync): `repack -a -d` alone keeps the source's deltas, and a
    source packed without a delta search stays 2.2x too large on disk and on every clone."""
    path = repo.disk_path
    with repository_lock(repo.pk, purpose="maintenance", timeout=settings.GIT_IMPORT_TIMEOUT):
        run_git(["repack", "-a", "-d", "-f", "-b", "--quiet", f"--window={settings.REPACK_WINDOW}",
                 f"--depth={settings.REPACK_DEPTH}"], repo=path, timeout=settings.GIT_IMPORT_TIMEOUT)
        run_git(["commit-graph", "write", "--reachable", "--changed-paths"], repo=path,
                timeout=settings.GIT_IMPORT_TIMEOUT)
    Repository.objects.filter(pk=repo.pk).update(
        fresh_packed_at=timezone.now(), fresh_delta_ratio=delta_ratio(path), last_maintained_at=timezone.now()
    )

