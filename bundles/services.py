"""Writes: a build run under the repository's lock, with its BundleBuild history row; what a
visibility change does to a repository's bundles."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Exists, Max, OuterRef, Q, Subquery
from django.utils import timezone

from bundles import build, locking
from bundles.models import BuildState, Bundle, BundleBuild, BundleState, Kind
from bundles.storage import PRIVATE, PUBLIC, StorageError, get_storage
from repos.models import RefUpdate, Repository, Visibility

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    status: str  # "built", "skipped", "busy"
    detail: str = ""
    outcome: build.BuildOutcome | None = None


def _dead_reason(run: BundleBuild, holder: str | None, lease_cutoff: datetime) -> str:
    """Why a RUNNING build is known dead ("" if it may still be running)."""
    if run.claimed_by:
        if holder != run.claimed_by:
            return "its claim on the repository is gone"
        if locking.holder_is_dead(run.claimed_by):
            host, pid = run.claimed_by.split(":")[:2]
            return f"process {pid} on {host} is gone"
    elif holder is None:
        return "no build holds the repository"  # a row from before claims were recorded
    beat = run.heartbeat_at or run.started_at
    if beat < lease_cutoff:
        return f"no heartbeat since {beat:%Y-%m-%d %H:%M:%S} UTC"
    return ""


def bundles_reap_dead_builds(*, repo: Repository | None = None) -> int:
    """Mark FAILED the RUNNING builds whose worker died (killed, lost its machine), so that
    none counts as covering a later request and the scheduler sees the repository's newest
    build failed. Returns how many were marked."""
    running = list(
        BundleBuild.objects.filter(state=BuildState.RUNNING, **({"repository": repo} if repo else {}))
    )
    if not running:
        return 0
    claims = locking.holders({run.repository_id for run in running})
    cutoff = timezone.now() - settings.BUNDLE_STALE_CLAIM
    reaped = 0
    for run in running:
        why = _dead_reason(run, claims.get(run.repository_id), cutoff)
        # Conditional on the state: a build that finished meanwhile keeps its outcome.
        if why and BundleBuild.objects.filter(pk=run.pk, state=BuildState.RUNNING).update(
            state=BuildState.FAILED, finished_at=timezone.now(), error=f"worker died: {why}"
        ):
            log.warning("bundles: build %s of repository %s: worker died: %s", run.pk, run.repository_id, why)
            reaped += 1
    return reaped


def _covered_by_later_build(repo: Repository, requested_at: datetime) -> bool:
    """A build that started after the push saw its refs (the signal is sent after the push
    commits, and refs move before that), so this request is already served. A running build
    covers it only while its worker lives (dead ones are reaped first)."""
    bundles_reap_dead_builds(repo=repo)
    return BundleBuild.objects.filter(
        repository=repo,
        started_at__gt=requested_at,
        state__in=[BuildState.RUNNING, BuildState.SUCCEEDED, BuildState.SKIPPED],
    ).exists()


def bundles_build(
    *, repo: Repository, requested_at: datetime | None = None, deep_audit: bool = False
) -> RunResult:
    if requested_at is not None and _covered_by_later_build(repo, requested_at):
        return RunResult("skipped", "a build that started after this request covers it")
    me = locking.claim(repo.pk)
    if me is None:
        return RunResult("busy", "another build holds this repository")
    try:
        # Runs the lock was taken over from never finished; say so in the history.
        BundleBuild.objects.filter(repository=repo, state=BuildState.RUNNING).update(
            state=BuildState.FAILED,
            finished_at=timezone.now(),
            error="worker died: its claim on the repository was taken over",
        )
        run = BundleBuild.objects.create(
            repository=repo, progress="starting", claimed_by=me, heartbeat_at=timezone.now()
        )
        try:
            with locking.heartbeat(repo.pk, me):
                outcome = build.build_repository_bundles(repo, build=run, deep_audit=deep_audit)
        except Exception as exc:
            BundleBuild.objects.filter(pk=run.pk).update(
                state=BuildState.FAILED, finished_at=timezone.now(), error=str(exc)[:4000]
            )
            raise
        state = BuildState.SUCCEEDED if outcome.kind else BuildState.SKIPPED
        BundleBuild.objects.filter(pk=run.pk).update(
            state=state, finished_at=timezone.now(), progress=outcome.reason or f"built {outcome.kind} bundle"
        )
        return RunResult("built" if outcome.kind else "skipped", outcome.reason, outcome)
    finally:
        locking.release(repo.pk, me)


def bundles_visibility_changed(*, repo: Repository) -> int:
    """The repository changed visibility: its bundles belong in the other area now.

    Lists already skip the old area (bundles.selectors.listable); here the old bundles are
    unlisted for good, and a private repository's objects under `public/` are deleted at once
    (no grace period: anyone may be reading `public/`); the task then queues a build into the
    new area. Returns the number of objects deleted. Storage trouble is logged, not raised: the
    visibility change stands, and the next build (beat runs it for repositories in this state)
    finishes the job.
    """
    repo.refresh_from_db(fields=["visibility"])
    build.retire_other_areas(repo)
    deleted = 0
    try:
        deleted = build.purge_exposed(repo, get_storage())
    except StorageError:
        log.exception("could not delete the public bundles of %s; the next build retries", repo.full_name)
    return deleted


def repositories_due_for_bundles():
    """Repositories the scheduler builds: never built, pushed to canonical refs since their
    last build started, whose newest build failed or died (dead builds are marked failed
    here first), or with bundles no list shows."""
    last_start = (
        BundleBuild.objects.filter(repository=OuterRef("pk"))
        .values("repository")
        .annotate(m=Max("started_at"))
        .values("m")
    )
    canonical_since = RefUpdate.objects.filter(
        push__repository=OuterRef("pk"), push__created_at__gt=OuterRef("last_build")
    ).filter(Q(ref__startswith="refs/heads/") | Q(ref__startswith="refs/tags/"))
    never_built = ~Exists(BundleBuild.objects.filter(repository=OuterRef("pk")))
    bundles_reap_dead_builds()
    newest_state = Subquery(
        BundleBuild.objects.filter(repository=OuterRef("pk"))
        .order_by("-started_at", "-id")
        .values("state")[:1]
    )
    # Bundles that no list shows: published outside the area the visibility calls for (a
    # change the receiver missed, keys from before areas existed), objects of a private
    # repository under public/, or, for a repository that had bundles, no listable base (a
    # visibility change whose queued build was lost, objects found missing).
    rows = Bundle.objects.filter(repository=OuterRef("pk"))
    published = rows.filter(state=BundleState.PUBLISHED)
    public = Q(visibility=Visibility.PUBLIC)
    misplaced = (public & Exists(published.exclude(storage_key__startswith=f"{PUBLIC}/"))) | (
        ~public
        & (
            Exists(published.exclude(storage_key__startswith=f"{PRIVATE}/"))
            | Exists(rows.filter(storage_key__startswith=f"{PUBLIC}/"))
        )
    )
    bases = published.filter(kind=Kind.BASE)
    listable = (public & Exists(bases.filter(storage_key__startswith=f"{PUBLIC}/"))) | (
        ~public & Exists(bases.filter(storage_key__startswith=f"{PRIVATE}/"))
    )
    unlisted = Exists(rows) & ~listable
    return (
        Repository.objects.annotate(last_build=last_start[:1], newest_state=newest_state)
        .filter(deleted_at__isnull=True)
        .filter(
            never_built | Exists(canonical_since) | Q(newest_state=BuildState.FAILED) | misplaced | unlisted
        )
        .order_by("pk")
    )


class BundlesBusy(Exception):
    """A build holds the repository's lock; the purge waits for the next run."""


def bundles_repository_purged(*, repo: Repository) -> int:
    """The repository is being purged (repos.lifecycle): delete its bundle objects from storage,
    S3 included. Keys are content-addressed, so a key another repository's rows still name
    (an identical import) is left alone. Runs under the build lock so no build uploads behind
    it; storage errors propagate and the purge is retried. CDN caches in front of the store
    keep their copies until they expire. Returns the number of objects deleted."""
    me = locking.claim(repo.pk)
    if me is None:
        raise BundlesBusy(f"a bundle build holds repository {repo.pk}")
    try:
        keys = set(
            Bundle.objects.filter(repository=repo)
            .exclude(storage_key="")
            .values_list("storage_key", flat=True)
        )
        shared = set(
            Bundle.objects.filter(storage_key__in=keys)
            .exclude(repository=repo)
            .values_list("storage_key", flat=True)
        )
        storage = get_storage()
        deleted = 0
        for key in sorted(keys - shared):
            storage.delete(key)
            deleted += 1
        Bundle.objects.filter(repository=repo).update(state=BundleState.DELETED, deleted_at=timezone.now())
        log.info("deleted %s bundle objects of purged repository %s", deleted, repo.pk)
        return deleted
    finally:
        locking.release(repo.pk, me)
