"""Building and publishing a repository's bundles (one run; the lock is services.py's job).

A run: forget rows a crashed run left in BUILDING, drop published bundles whose objects are
missing or damaged, then build the next bundle, either an incremental covering what the
canonical refs gained since the current generation or, when there is none yet or the
incrementals are too many or too large, a new base. Both flavors are written, verified, stored
and read back before either is listed; then both are published in one transaction (a new
base supersedes the old generation in the same one). Superseded objects are deleted after
BUNDLE_DELETE_GRACE.

Objects are stored in the area of the repository's visibility (bundles.storage): a run first
retires bundles of the other area (a visibility change, or keys from before areas existed) and
deletes at once, without a grace period, anything of a now-private repository still under
`public/`; publication re-checks the visibility, so a change during the run cannot leave a
private repository's bundle listed or public.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from bundles import packing, selectors
from bundles.models import Bundle, BundleBuild, BundleState, Flavor, Kind
from bundles.storage import (
    CONTENT_TYPE,
    PUBLIC,
    BundleStorage,
    StorageError,
    area_for,
    file_digest,
    get_storage,
    scratch_dir,
)
from gitcore.git import GitError
from repos.models import Repository, Visibility

log = logging.getLogger(__name__)

# Test hooks: name -> callable run at that point of a build (tests raise or hang there to
# play a worker dying mid-build). Empty in production.
FAILPOINTS: dict[str, Callable[[], None]] = {}


def _checkpoint(name: str) -> None:
    hook = FAILPOINTS.get(name)
    if hook is not None:
        hook()


@dataclass(frozen=True)
class BuildOutcome:
    kind: str  # "base", "incremental", or "" when nothing was built
    reason: str = ""
    creation_token: int | None = None


@dataclass(frozen=True)
class Plan:
    kind: str
    spec: packing.BundleSpec
    commit_count: int


def _progress(build: BundleBuild | None, text: str) -> None:
    log.info("bundles: %s", text)
    if build is not None:
        BundleBuild.objects.filter(pk=build.pk).update(progress=text[:200])


def object_key(sha256: str, flavor: str, area: str) -> str:
    return f"{area}/{sha256}.zst.bundle" if flavor == Flavor.ZSTD else f"{area}/{sha256}.bundle"


# --- cleaning up --------------------------------------------------------------------------------


def abandon_unfinished(repo: Repository) -> int:
    """Rows a crashed run left in BUILDING were never listed; mark them deleted (their objects,
    if any were stored, go with the grace-period prune)."""
    return Bundle.objects.filter(repository=repo, state=BundleState.BUILDING).update(
        state=BundleState.DELETED, deleted_at=timezone.now()
    )


def drop_from(repo_id: int, creation_token: int, *, reason: str) -> int:
    """Unlist the bundle with this token and every later one of the repository (later
    incrementals need it as a prerequisite), both flavors. The next build fills the gap."""
    log.warning(
        "bundles: dropping bundles of repository %s from token %s: %s", repo_id, creation_token, reason
    )
    return Bundle.objects.filter(
        repository_id=repo_id, state=BundleState.PUBLISHED, creation_token__gte=creation_token
    ).update(state=BundleState.DELETED, deleted_at=timezone.now())


def retire_other_areas(repo: Repository) -> int:
    """Unlist published bundles stored outside the repository's current area: it changed
    visibility, or they predate areas. Lists already skip them (bundles.selectors.listable);
    this starts their grace period and lets plan() build a new base in the right area."""
    return (
        Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED)
        .exclude(storage_key__startswith=f"{area_for(repo)}/")
        .update(state=BundleState.DELETED, deleted_at=timezone.now())
    )


def purge_exposed(repo: Repository, storage: BundleStorage, *, include_building: bool = False) -> int:
    """Delete, now, the objects a private repository still has under `public/`, where a
    bucket policy or CDN may serve them to anyone; the number deleted.

    A key also named by a public repository stays (same sha256, same bytes: public already)
    and is pruned with that repository's rows. Rows of a build in progress are left to that
    build (include_building=False), which purges after itself: it holds the lock and knows
    when its uploads are over.
    """
    if repo.is_public:
        return 0
    rows = Bundle.objects.filter(repository=repo, storage_key__startswith=f"{PUBLIC}/")
    if not include_building:
        rows = rows.exclude(state=BundleState.BUILDING)
    deleted = 0
    for key in sorted(set(rows.values_list("storage_key", flat=True))):
        shared = (
            Bundle.objects.filter(storage_key=key, repository__visibility=Visibility.PUBLIC)
            .exclude(repository=repo)
            .exists()
        )
        if not shared:
            storage.delete(key)
            deleted += 1
        now = timezone.now()
        rows.filter(storage_key=key).exclude(state=BundleState.DELETED).update(
            state=BundleState.DELETED, deleted_at=now
        )
        rows.filter(storage_key=key).update(storage_key="")
    if deleted:
        log.warning("bundles: deleted %s public objects of private repository %s", deleted, repo.full_name)
    return deleted


def audit(repo: Repository, storage: BundleStorage, *, deep: bool = False) -> int | None:
    """Drop published bundles whose object is missing or damaged; the token dropped from.

    By default the size is compared (one stat or HEAD per object); deep=True reads every object
    back and compares its sha256.
    """
    rows = Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).order_by("creation_token")
    for row in rows:
        if deep:
            found = storage.digest(row.storage_key)
            ok = found is not None and (found.size, found.sha256) == (row.size, row.sha256)
        else:
            ok = storage.size(row.storage_key) == row.size
        if not ok:
            drop_from(repo.pk, row.creation_token, reason=f"object {row.storage_key} missing or damaged")
            return row.creation_token
    return None


def prune(storage: BundleStorage, *, repo: Repository | None = None) -> int:
    """Delete objects of bundles superseded longer than the grace period ago, unless a live
    row still names the same (content-addressed) object."""
    cutoff = timezone.now() - settings.BUNDLE_DELETE_GRACE
    expired = Bundle.objects.filter(state=BundleState.DELETED, deleted_at__lte=cutoff).exclude(storage_key="")
    if repo is not None:
        expired = expired.filter(repository=repo)
    deleted = 0
    for row in expired:
        in_use = (
            Bundle.objects.filter(storage_key=row.storage_key).exclude(state=BundleState.DELETED).exists()
            or Bundle.objects.filter(
                storage_key=row.storage_key, state=BundleState.DELETED, deleted_at__gt=cutoff
            ).exists()
        )
        if not in_use:
            storage.delete(row.storage_key)
            deleted += 1
        Bundle.objects.filter(pk=row.pk).update(storage_key="")
    return deleted


# --- planning -----------------------------------------------------------------------------------


def _collapse_due(generation: list[Bundle]) -> bool:
    incrementals = generation[1:]
    if len(incrementals) >= settings.BUNDLE_COLLAPSE_COUNT:
        return True
    return sum(b.size for b in incrementals) > settings.BUNDLE_COLLAPSE_FRACTION * generation[0].size


def plan(repo: Repository, refs: dict[str, str]) -> Plan | None:
    """What to build next, or None when the current generation already covers every ref."""
    path = repo.disk_path
    generation = selectors.current_generation(repo)
    covered = selectors.covered_tips(generation)
    changed = {ref: oid for ref, oid in refs.items() if covered.get(ref) != oid}
    if generation and not changed:
        return None
    if generation and not _collapse_due(generation):
        exclude = sorted(set(covered.values()))
        try:
            prerequisites, commits = packing.boundary(path, sorted(set(changed.values())), exclude)
        except GitError:
            # A tip the generation covers is gone from the repository (force-push, then
            # pruned): nothing can be based on it, so start a new generation.
            log.info("bundles: previous tips of %s unreadable; building a new base", repo.full_name)
        else:
            spec = packing.BundleSpec(changed, prerequisites, exclude)
            return Plan(Kind.INCREMENTAL, spec, commits)
    return Plan(Kind.BASE, packing.BundleSpec(refs), packing.count_commits(path, sorted(set(refs.values()))))


def next_token(repo: Repository) -> int:
    """Increasing per repository (git applies bundles in creationToken order); seconds since
    the epoch where that is larger, so tokens also say when a bundle was made."""
    latest = Bundle.objects.filter(repository=repo).aggregate(m=Max("creation_token"))["m"] or 0
    return max(int(time.time()), latest + 1)


# --- building -----------------------------------------------------------------------------------


def _build_flavor(
    repo, storage, work: Path, the_plan: Plan, token: int, flavor: str, build, area: str
) -> Bundle:
    row = Bundle.objects.create(
        repository=repo,
        kind=the_plan.kind,
        flavor=flavor,
        creation_token=token,
        tips=dict(the_plan.spec.refs),
        prerequisites=list(the_plan.spec.prerequisites),
        commit_count=the_plan.commit_count,
    )
    raw = work / f"{flavor}.bundle"
    zstd = flavor == Flavor.ZSTD
    _progress(build, f"writing the {flavor} {the_plan.kind} bundle ({the_plan.commit_count} commits)")
    packing.write_bundle(repo.disk_path, raw, the_plan.spec, uncompressed=zstd)
    if zstd:
        final = work / f"{flavor}.bundle.zst"
        _progress(build, f"compressing the {the_plan.kind} bundle with zstd")
        packing.compress_zstd(raw, final)
        raw.unlink()
        # Verify what clients will get: the stored file, decompressed.
        checked = work / "zstd-check.bundle"
        packing.decompress_zstd(final, checked)
    else:
        final = checked = raw
    _progress(build, f"verifying the {flavor} {the_plan.kind} bundle")
    packing.verify_bundle(checked, the_plan.spec, source_repo=repo.disk_path)
    if checked != final:
        checked.unlink()
    _checkpoint(f"verified-{flavor}")
    digest = file_digest(final)
    key = object_key(digest.sha256, flavor, area)
    # The key is recorded before the upload, so an object a crash leaves behind is known to
    # the row and removed by the prune.
    Bundle.objects.filter(pk=row.pk).update(storage_key=key, size=digest.size, sha256=digest.sha256)
    _progress(build, f"storing the {flavor} {the_plan.kind} bundle ({digest.size} bytes)")
    storage.put(key, final, content_type=CONTENT_TYPE, content_encoding="zstd" if zstd else None)
    _checkpoint(f"stored-{flavor}")
    stored = storage.digest(key)
    if stored is None or (stored.size, stored.sha256) != (digest.size, digest.sha256):
        raise StorageError(f"{key} read back as {stored}, expected {digest}")
    final.unlink()
    row.refresh_from_db()
    return row


def _publish(repo: Repository, rows: list[Bundle], kind: str, token: int, area: str) -> bool:
    """List the rows; False (nothing listed) if the repository changed visibility meanwhile."""
    now = timezone.now()
    with transaction.atomic():
        if kind == Kind.BASE:
            Bundle.objects.filter(
                repository=repo, state=BundleState.PUBLISHED, creation_token__lt=token
            ).update(state=BundleState.DELETED, deleted_at=now)
        updated = Bundle.objects.filter(pk__in=[r.pk for r in rows], state=BundleState.BUILDING).update(
            state=BundleState.PUBLISHED, published_at=now
        )
        if updated != len(rows):
            # Another run abandoned our rows: only possible if our lock was taken over.
            raise StorageError("bundle rows changed state during the build; not publishing")
        # Read after the writes above, with the row locked: a visibility change (which saves
        # this row) either committed before, and is seen here, or commits after, and its
        # receiver (bundles.services.bundles_visibility_changed) retires what we publish.
        visibility = (
            Repository.objects.select_for_update()
            .filter(pk=repo.pk)
            .values_list("visibility", flat=True)
            .first()
        )
        if visibility is None or (visibility == Visibility.PUBLIC) != (area == PUBLIC):
            transaction.set_rollback(True)
            return False
    return True


def build_repository_bundles(repo: Repository, *, build: BundleBuild | None = None, deep_audit=False):
    """One build run. The caller holds the repository's bundle lock."""
    storage = get_storage()
    repo.refresh_from_db(fields=["visibility"])
    area = area_for(repo)
    abandon_unfinished(repo)
    retire_other_areas(repo)
    purge_exposed(repo, storage, include_building=True)
    dropped = audit(repo, storage, deep=deep_audit)
    refs = packing.canonical_refs(repo.disk_path)
    if not refs:
        return BuildOutcome("", "the repository has no branches or tags")
    the_plan = plan(repo, refs)
    if the_plan is None:
        prune(storage, repo=repo)
        return BuildOutcome("", "bundles are up to date")
    token = next_token(repo)
    work = scratch_dir(repo.pk)
    try:
        rows = [
            _build_flavor(repo, storage, work, the_plan, token, flavor, build, area)
            for flavor in (Flavor.STANDARD, Flavor.ZSTD)
        ]
        _checkpoint("before-publish")
        published = _publish(repo, rows, the_plan.kind, token, area)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if area == PUBLIC:
            # Gone private while we uploaded to public/: delete what this run stored there
            # (the visibility change's own purge leaves a running build's rows alone).
            repo.refresh_from_db(fields=["visibility"])
            purge_exposed(repo, storage, include_building=True)
    if not published:
        abandon_unfinished(repo)
        return BuildOutcome("", "the repository's visibility changed during the build; not published")
    _progress(build, f"published {the_plan.kind} bundle {token}")
    prune(storage, repo=repo)
    reason = f"rebuilt after dropping bundles from {dropped}" if dropped else ""
    return BuildOutcome(the_plan.kind, reason, token)
