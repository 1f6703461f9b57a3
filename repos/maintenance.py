"""Repository maintenance, in place of git's automatic gc.

A full repack with a reachability bitmap (clones and fetches count objects from the bitmap
instead of walking history) plus a commit-graph (history walks read it instead of parsing
commits), and the refs packed. Unreachable objects go to a cruft pack rather than being
dropped: nothing pushed is deleted by maintenance.

One run at a time per repository: repos.locking's "maintenance" claim; a second worker that
finds it held returns at once. maintenance_claimed_at records a run in progress, so the
scheduler does not queue it again meanwhile; a killed run's record expires after
MAINTENANCE_STALE_CLAIM (its lock went with its process).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from gitcore.git import run_git
from repos import changelog, locking
from repos.locking import repository_lock
from repos.models import ChangeKind, Repository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MaintenanceResult:
    ran: bool
    reason: str = ""


def maintain_repository(repo: Repository) -> MaintenanceResult:
    held = locking.claim("maintenance", repo.pk)
    if held is None:
        return MaintenanceResult(False, "another maintenance run holds this repository")
    with held:
        Repository.objects.filter(pk=repo.pk).update(maintenance_claimed_at=timezone.now())
        pushes_seen = repo.pushes_since_maintenance
        try:
            path = repo.disk_path
            # Not while a merge or a cleanup moves refs (repos.locking); they wait for the repack.
            with repository_lock(repo.pk, purpose="maintenance", timeout=settings.GIT_TIMEOUT):
                fresh = needs_fresh_deltas(repo, path)
                if fresh:
                    _repack_fresh(repo, path)
                    pack_refs(path)
                else:
                    repack(path)
                _record(repo, "repacked" + (" with a fresh delta search" if fresh else "") + ", refs packed")
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


def repack(path) -> None:
    """The repack of a maintenance run, on any copy of a repository (a replica repacks its own
    when the primary's maintenance is in the log)."""
    run_git(["repack", "-a", "-d", "-b", "--cruft", "--quiet"], repo=path)
    run_git(["commit-graph", "write", "--reachable", "--changed-paths"], repo=path)
    pack_refs(path)


def pack_refs(path) -> None:
    # What git's gc does: loose refs into packed-refs (reftable: tables compacted). Pushes
    # and fetches leave one file per ref; 2,000 tags and branches loose cost every
    # for-each-ref and `--branches --tags` walk (the Work view runs both) 40 ms more than
    # packed.
    run_git(["pack-refs", "--all"], repo=path)


def remove_unreachable_objects(path) -> None:
    """Drop what no ref reaches any more, for good: a purge's object removal, on the primary
    (workspaces.moderation) and on every replica (replication.sync).

    `reflog expire --expire-unreachable=now --all` drops reflog entries no longer reachable
    from their ref's tip (a branch that once pointed at purged work), which would otherwise
    keep the objects; the repack then drops unreachable objects at once
    (`--cruft-expiration=now`), and `prune` any loose ones."""
    run_git(["reflog", "expire", "--expire-unreachable=now", "--all"], repo=path)
    run_git(
        ["repack", "-a", "-d", "-b", "--cruft", "--cruft-expiration=now", "--quiet"],
        repo=path,
        timeout=3600,
    )
    run_git(["prune", "--expire=now"], repo=path, timeout=3600)
    run_git(["commit-graph", "write", "--reachable"], repo=path)


def repositories_due_for_maintenance():
    """Repositories with pushes since their last run, or never maintained, or not for a while."""
    now = timezone.now()
    cutoff = now - settings.MAINTENANCE_INTERVAL
    running = Q(maintenance_claimed_at__gte=now - settings.MAINTENANCE_STALE_CLAIM)
    return (
        Repository.objects.filter(deleted_at__isnull=True)
        .exclude(running)
        .filter(
            Q(last_maintained_at__isnull=True)
            | Q(pushes_since_maintenance__gt=0, last_maintained_at__lt=cutoff)
        )
    )


def pack_stats(path) -> tuple[int, int]:
    """(packed objects, pack bytes) from `count-objects -v`: no object is read."""
    fields = dict(
        line.split(": ", 1)
        for line in run_git(["count-objects", "-v"], repo=path).text.splitlines()
        if ": " in line
    )
    return int(fields.get("in-pack", "0") or 0), int(fields.get("size-pack", "0") or 0) * 1024


def bytes_per_object(path) -> float | None:
    objects, size = pack_stats(path)
    return size / objects if objects else None


def needs_fresh_deltas(repo: Repository, path) -> bool:
    """A repository that never had a fresh delta search gets one once it holds a real history;
    after that, when its bytes per object grew past REPACK_FRESH_GROWTH times what the last one
    left. `repack -a -d` reuses whatever deltas arrived, and keeps objects
    that arrived without one as they are: a history imported or mirrored from a badly packed
    source stays large (bench/packing.py: 65 MiB against 8.3 MiB fresh)."""
    objects, size = pack_stats(path)
    if not objects:
        return False
    if repo.fresh_bytes_per_object is None:
        return objects >= FRESH_MIN_OBJECTS
    return size / objects > repo.fresh_bytes_per_object * settings.REPACK_FRESH_GROWTH


# Below this, a history is too small for a delta search to matter.
FRESH_MIN_OBJECTS = 1000


def _repack_fresh(repo: Repository, path) -> None:
    run_git(
        [
            "repack",
            "-a",
            "-d",
            "-f",
            "-b",
            "--cruft",
            "--quiet",
            f"--window={settings.REPACK_WINDOW}",
            f"--depth={settings.REPACK_DEPTH}",
        ],
        repo=path,
        timeout=settings.GIT_IMPORT_TIMEOUT,
    )
    run_git(
        ["commit-graph", "write", "--reachable", "--changed-paths"],
        repo=path,
        timeout=settings.GIT_IMPORT_TIMEOUT,
    )
    Repository.objects.filter(pk=repo.pk).update(
        fresh_packed_at=timezone.now(),
        fresh_bytes_per_object=bytes_per_object(path),
        last_maintained_at=timezone.now(),
    )


def repack_fresh(repo: Repository) -> None:
    """A full repack with a fresh delta search (window and depth from bench/packing.py), for
    history that arrived packed by someone else: an import, a large mirror sync."""
    path = repo.disk_path
    with repository_lock(repo.pk, purpose="maintenance", timeout=settings.GIT_IMPORT_TIMEOUT):
        _repack_fresh(repo, path)
        _record(repo, "repacked with a fresh delta search")


def _record(repo: Repository, summary: str) -> None:
    """The repack is a change of the objects (no ref moves): replicas maintain their copy in
    turn. Under the lock, so it is logged before any ref change that waited for the repack."""
    with transaction.atomic():
        changelog.record(repo.pk, ChangeKind.MAINTENANCE, summary=summary)
