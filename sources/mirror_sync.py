"""How one pull-mirror sync moves refs (sources.mirrors claims, schedules and records health).

The URL is checked again (DNS can change since the mirror was set up), the upstream's refs are
listed, `git fetch --atomic` brings `refs/heads/*` and `refs/tags/*` under the object checks,
and what the listing no longer has is deleted, all under the repository's lock so that
merged-ref cleanup, merges and maintenance do not interleave. The canonical refs are read before and after: their difference is the push
recorded by "mirror" (a rewritten upstream branch is recorded as forced, by repos.pushes).
Nothing else is touched: workspaces (`refs/users/*`) and the platform's hidden refs stay.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from gitcore.git import GitError
from gitcore.gittools import ZERO_OID, RefTransaction, text_ref_map, zero_like
from repos import netguard, objectcheck, objectcheck_services, pushes, services
from repos.errors import ServiceError
from repos.locking import repository_lock
from repos.models import ChangeKind, Mirror, Repository
from sources import fetching
from sources.fetching import FetchFailed, Progress

log = logging.getLogger(__name__)
HEADS, TAGS = "refs/heads/", "refs/tags/"
REFSPECS = [f"+{HEADS}*:{HEADS}*", f"+{TAGS}*:{TAGS}*"]
# The user name a sync is recorded under; reserved (repos.names), so no account can take it.
PUSHER = "mirror"
# Waiting for the repository's lock: a merge or a cleanup takes seconds; a repack of a big
# repository longer, and the sync is then retried soon (RepositoryBusy, see sources.mirrors).
LOCK_TIMEOUT = 120
# The phases in which git counts the objects a fetch brings: ours (index-pack, or
# unpack-objects below fetch.unpackLimit, whose meter only shows on slow fetches) and the
# upstream's (what it packs for us).
_OBJECT_PHASES = ("Receiving objects", "Unpacking objects", "Enumerating objects", "Counting objects")


@dataclass(frozen=True)
class Synced:
    push_id: int | None  # None when nothing moved
    objects: int  # objects the fetch brought


class _ObjectCounter:
    def __init__(self):
        self.objects = 0

    def __call__(self, progress: Progress) -> None:
        if progress.phase in _OBJECT_PHASES:
            self.objects = max(self.objects, progress.total or progress.done)


def canonical_refs(path: Path) -> dict[str, str]:
    return text_ref_map(path, HEADS, TAGS)


def ref_updates(before: dict[str, str], after: dict[str, str]) -> list[pushes.Update]:
    """What moved, branches first, each kind by name."""
    any_oid = next(iter(after.values()), None) or next(iter(before.values()), ZERO_OID)
    zero = zero_like(any_oid)  # 40, or 64 in a SHA-256 repository
    changed = sorted(
        (ref for ref in before.keys() | after.keys() if before.get(ref) != after.get(ref)),
        key=lambda ref: (not ref.startswith(HEADS), ref),
    )
    return [pushes.Update(before.get(ref, zero), after.get(ref, zero), ref) for ref in changed]


def fetch_and_record(mirror: Mirror, source: netguard.Source) -> Synced:
    """Sync from `source` (mirror.url as the SSRF guard checked it just now). Raises FetchFailed
    or GitError (the refs are then as they were), or RepositoryBusy."""
    repo: Repository = mirror.repository
    remote = fetching.list_remote(source)
    wanted = [ref for ref in remote.refs if ref.startswith((HEADS, TAGS))]
    if not any(ref.startswith(HEADS) for ref in wanted):
        # An upstream emptied by accident (or a server answering with nothing) would otherwise
        # prune every branch here: a mirror never deletes because something went wrong.
        raise FetchFailed(
            f"{source.display_url} lists no branches; refusing to delete every branch of the "
            f"mirror. Check the URL, or stop mirroring to keep this repository as it is."
        )
    if len(wanted) > settings.IMPORT_MAX_REFS:
        raise FetchFailed(
            f"{source.display_url} has {len(wanted):,} branches and tags, more than the "
            f"{settings.IMPORT_MAX_REFS:,} a repository here may take."
        )
    path = repo.disk_path
    counter = _ObjectCounter()
    with repository_lock(repo.pk, purpose="mirror sync", timeout=LOCK_TIMEOUT):
        before = canonical_refs(path)
        result = fetching.fetch(
            path,
            source,
            REFSPECS,
            overrides=objectcheck.repository_overrides(repo),
            on_progress=counter,
            max_bytes=settings.IMPORT_MAX_SIZE,
            timeout=settings.GIT_IMPORT_TIMEOUT,
        )
        # Pruned against the listing checked above, not by `fetch --prune`: an upstream that
        # emptied between the listing and the fetch must not empty the mirror.
        _prune(path, canonical_refs(path), set(wanted))
        after = canonical_refs(path)
        push = pushes.push_record(
            repo=repo, pusher=None, pusher_name=PUSHER, protocol="mirror", updates=ref_updates(before, after)
        )
    # The refs moved and the push is recorded: what follows must not turn the sync into a failure.
    try:
        objectcheck_services.record_legacy(repo, result.messages, source="mirror")
        _follow_default_branch(repo, remote.head, after)
    except (GitError, ServiceError):
        log.exception("after syncing the mirror %s", repo.full_name)
    return Synced(push.pk if push else None, counter.objects)


def _prune(path: Path, refs: dict[str, str], listed: set[str]) -> None:
    """Delete the branches and tags the upstream no longer lists, each only if it still points
    where it was read (one transaction)."""
    stale = sorted(ref for ref in refs if ref not in listed)
    if stale:
        tx = RefTransaction(path)
        for ref in stale:
            tx.delete(ref, old=refs[ref])
        tx.commit()


def _follow_default_branch(repo: Repository, upstream_head: str | None, refs: dict[str, str]) -> None:
    """When the repository's default branch is not (or no longer) there, take the upstream's:
    a mirror set up on a new repository, or an upstream that renamed master to main."""
    if f"{HEADS}{repo.default_branch}" in refs or not upstream_head or f"{HEADS}{upstream_head}" not in refs:
        return
    services.repository_update(repo=repo, default_branch=upstream_head, change_kind=ChangeKind.MIRROR)
