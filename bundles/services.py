"""Writes: a build run under the repository's lock, with its BundleBuild history row."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from bundles import build, locking
from bundles.models import BuildState, BundleBuild
from repos.models import Repository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResult:
    status: str  # "built", "skipped", "busy"
    detail: str = ""
    outcome: build.BuildOutcome | None = None


def _covered_by_later_build(repo: Repository, requested_at: datetime) -> bool:
    """A build that started after the push saw its refs (the signal is sent after the push
    commits, and refs move before that), so this request is already served."""
    return BundleBuild.objects.filter(
        repository=repo,
        started_at__gt=requested_at,
        state__in=[BuildState.RUNNING, BuildState.SUCCEEDED, BuildState.SKIPPED],
    ).exists()


def bundles_build(*, repo: Repository, requested_at: datetime | None = None, deep_audit: bool = False) -> RunResult:
    if requested_at is not None and _covered_by_later_build(repo, requested_at):
        return RunResult("skipped", "a build that started after this request covers it")
    me = locking.claim(repo.pk)
    if me is None:
        return RunResult("busy", "another build holds this repository")
    try:
        # Runs the lock was taken over from never finished; say so in the history.
        BundleBuild.objects.filter(repository=repo, state=BuildState.RUNNING).update(
            state=BuildState.FAILED, finished_at=timezone.now(), error="the build's worker stopped"
        )
        run = BundleBuild.objects.create(repository=repo, progress="starting")
        try:
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


def repositories_due_for_bundles():
    from django.db.models import Exists, Max, OuterRef, Q

    from repos.models import RefUpdate

    last_start = BundleBuild.objects.filter(repository=OuterRef("pk")).values("repository").annotate(
        m=Max("started_at")
    ).values("m")
    canonical_since = RefUpdate.objects.filter(
        push__repository=OuterRef("pk"), push__created_at__gt=OuterRef("last_build")
    ).filter(Q(ref__startswith="refs/heads/") | Q(ref__startswith="refs/tags/"))
    never_built = ~Exists(BundleBuild.objects.filter(repository=OuterRef("pk")))
    return (
        Repository.objects.annotate(last_build=last_start[:1])
        .filter(never_built | Exists(canonical_since))
        .order_by("pk")
    )
