"""Reconciliation: the refs on disk against the pushlog, per repository.

Every ref change the platform makes is recorded (git pushes through the spool, merges, mirrors,
imports and removals by push_record), so a ref whose value on disk is not the last `new` the
pushlog recorded for it moved without a record: a push whose spool file was lost with its
disk, a repository restored from a backup, an operator's `git update-ref`. Each difference is
recorded as one "recovered" push by "system" (a reserved name), from the last recorded value
(or zero) to the value on disk, so the pushlog, cleanup, bundles and webhooks learn of it.

Only the namespaces pushes record are compared (branches, tags, workspaces). A workspace ref
missing from disk is no difference: merged-ref cleanup and moderation move workspace refs
without pushes; a missing branch or tag is a recovered deletion.

Both sides are read whole, each in one query or one git command (a repository may have 100k
refs). The repository lock keeps out the platform's own writers (merges, mirror syncs,
removals, cleanup, moderation); a git push takes no lock, so a repository with a spooled push
waits for the replay, and a difference is recorded only if it is still there after a pause in
which any push that moved refs has spooled itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from gitcore.gittools import ZERO_OID, text_ref_map, zero_like
from repos import push_spool, pushes, selectors
from repos.hooks import refspace
from repos.locking import RepositoryBusy, repository_lock
from repos.models import ChangeKind, Push, RefUpdate, Repository

log = logging.getLogger(__name__)

NAMESPACES = ("refs/heads/", "refs/tags/", refspace.WORKSPACES)
DELETIONS_COUNT_IN = ("refs/heads/", "refs/tags/")
PUSHER = "system"
PROTOCOL = "recovered"
# Longer than receive-pack takes from updating the refs to post-receive's spool file.
SETTLE_SECONDS = 2.0
LOCK_TIMEOUT = 30.0


@dataclass(frozen=True)
class Reconciled:
    outcome: str  # "recorded", "in step", "pending" (a spooled push first), "busy" or "gone"
    push_id: int | None = None
    updates: int = 0


def refs_on_disk(repo: Repository) -> dict[str, str]:
    return text_ref_map(repo.disk_path, *NAMESPACES)


def latest_recorded(repo: Repository) -> dict[str, str]:
    """The last recorded value of every ref the pushlog knows, in one query. Last by push time,
    not by id: a replayed push is recorded after pushes that came later."""
    rows = (
        RefUpdate.objects.filter(push__repository=repo)
        .annotate(
            rank=Window(
                RowNumber(), partition_by=[F("ref")], order_by=[F("push__created_at").desc(), F("id").desc()]
            )
        )
        .filter(rank=1)
        .values_list("ref", "new")
    )
    return {ref: new for ref, new in rows.iterator(chunk_size=5000) if ref.startswith(NAMESPACES)}


def differences(repo: Repository) -> list[pushes.Update]:
    """The ref updates that would bring the pushlog in step with the disk: branches first,
    then tags, then workspaces, each by name."""
    recorded = latest_recorded(repo)  # before the disk: a push recorded in between shows as moved
    disk = refs_on_disk(repo)
    sample = next(iter(disk.values()), None) or next(iter(recorded.values()), ZERO_OID)
    zero = zero_like(sample)
    updates = []
    for ref in disk.keys() | recorded.keys():
        old, new = recorded.get(ref, zero), disk.get(ref, zero)
        if old == new or (new == zero and not ref.startswith(DELETIONS_COUNT_IN)):
            continue
        updates.append(pushes.Update(old, new, ref))
    order = {prefix: i for i, prefix in enumerate(NAMESPACES)}
    return sorted(
        updates, key=lambda u: (next((order[p] for p in NAMESPACES if u.ref.startswith(p)), 9), u.ref)
    )


def reconcile_repository(repo: Repository, *, settle: float = SETTLE_SECONDS) -> Reconciled:
    if repo.deleted_at is not None:
        return Reconciled("gone")
    if selectors.active_import(repo) is not None:
        return Reconciled("busy")  # an import records its refs when it is done
    if repo.pk in push_spool.pending_repository_ids():
        return Reconciled("pending")
    try:
        with repository_lock(repo.pk, purpose="push reconciliation", timeout=LOCK_TIMEOUT):
            first = differences(repo)
            if not first:
                return Reconciled("in step")
            time.sleep(settle)
            if repo.pk in push_spool.pending_repository_ids():
                return Reconciled("pending")
            seen = set(first)
            updates = [u for u in differences(repo) if u in seen]
            if not updates:
                return Reconciled("in step")
            # Commits are listed where the pushlog has a history to fill a gap in; a repository
            # never recorded gets its refs only, as an import does (its history predates it).
            has_history = Push.objects.filter(repository=repo).exists()
            push = pushes.push_record(
                repo=repo,
                pusher=None,
                pusher_name=PUSHER,
                protocol=PROTOCOL,
                updates=updates,
                list_commits=has_history,
                kind=ChangeKind.RECONCILE,
            )
    except RepositoryBusy:
        return Reconciled("busy")
    log.warning(
        "recorded %d ref changes of %s found on disk without a record as push #%s",
        len(updates),
        repo.full_name,
        push.pk,  # type: ignore[union-attr]  # set whenever a push was recorded
    )
    return Reconciled("recorded", push.pk, len(updates))  # type: ignore[union-attr]
