"""Pull mirrors: a repository that tracks an upstream URL.

Celery beat asks `schedule_due` every minute which mirrors are due; `sync_mirror` fetches the
upstream's branches and tags under the object checks, deletes what the upstream no longer lists,
and records what moved as
one push by "mirror" (a reserved user name), so the pushlog, webhooks, bundles, show-work and
merged-ref cleanup react as they do to any push. The branches and tags of a mirror change only
that way: the push policy refuses them to everyone (repos/hooks/pushpolicy.py, Rules.mirror), while
workspaces stay open.

A mirror never deletes refs because something went wrong: a failed listing or fetch moves no ref
(`fetch --atomic`), an upstream that lists no branch at all is a failure, not a reason to
prune every branch, and deletions follow the listing that was checked, never the fetch itself
(an upstream emptied between the two deletes nothing). Failures back off (the interval doubles per failure, up to
MIRROR_MAX_BACKOFF) and the repository's admins hear of the first one of a streak and of the
recovery (repos.signals.mirror_status_changed; the notifications app listens).

Credentials are never stored: a mirror follows a URL anyone may fetch (the URL is shown on the
repository page). Staff may mirror local paths, as they may import them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from gitcore.git import GitError
from repos import enqueue, locking, netguard, selectors, signals
from repos.errors import Conflict, Forbidden, InvalidInput, ServiceError
from repos.locking import RepositoryBusy
from repos.models import Mirror, Repository
from sources import mirror_sync

MAX_INTERVAL_MINUTES = 7 * 24 * 60
# 2**failures beyond this exceeds any sane MIRROR_MAX_BACKOFF; capping it keeps the arithmetic small.
_MAX_DOUBLINGS = 30
# When the repository's lock stayed taken (a long repack), try again this soon.
BUSY_RETRY = timedelta(minutes=1)
_CREDENTIALS = re.compile(r"(\w+://)[^/@\s]*@")


def _is_staff(user) -> bool:
    return user is not None and user.is_active and user.is_staff


def _require_admin(actor, repo: Repository) -> None:
    """Turning a repository into a mirror (or back) is its admins' decision. `actor=None` is the
    operator (a management command, an import requested as a mirror by its owner)."""
    if actor is not None and not selectors.can_admin(actor, repo):
        raise Forbidden("Only the repository's admins may change its mirror.")


def scrub(text: str) -> str:
    """Error text safe to store and show: no user-info part of any URL git may have echoed."""
    return _CREDENTIALS.sub(r"\1", text or "")


def check_url(url: str, *, actor, probe: bool = False) -> netguard.Source:
    """The upstream as the SSRF guard checked it (repos.netguard: public hosts only unless
    IMPORT_ALLOW_PRIVATE_SOURCES; local paths for staff). URLs with credentials are refused:
    a mirror fetches again and again, and credentials are never stored."""
    url = (url or "").strip()
    if "://" in url:
        try:
            _, credentials = netguard.split_credentials(url)
        except ValueError:
            credentials = None  # prepare() says what is wrong with it
        if credentials is not None:
            raise InvalidInput(
                "A mirror cannot keep credentials: give a URL anyone may fetch, without "
                "user name or password.",
                code="source_refused",
                fields={"url": ["credentials"]},
            )
    try:
        return netguard.prepare(
            url, staff=_is_staff(actor), probe=probe, allow_private=settings.IMPORT_ALLOW_PRIVATE_SOURCES
        )
    except netguard.SourceRefused as exc:
        raise netguard.SourceRefused(exc.message, fields={"url": ["refused"]}) from None


def check_interval(value) -> int:
    """Minutes between syncs: a whole number from MIRROR_MIN_INTERVAL_MINUTES to a week."""
    if value is None or value == "":
        return max(settings.MIRROR_INTERVAL_MINUTES, settings.MIRROR_MIN_INTERVAL_MINUTES)
    minimum = settings.MIRROR_MIN_INTERVAL_MINUTES
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and value.isdigit() and len(value) <= 7)
    ):
        raise InvalidInput(
            "The interval is a whole number of minutes.", fields={"interval_minutes": ["invalid"]}
        )
    minutes = int(value)
    if not minimum <= minutes <= MAX_INTERVAL_MINUTES:
        raise InvalidInput(
            f"The interval is from {minimum} to {MAX_INTERVAL_MINUTES} minutes (a week).",
            fields={"interval_minutes": ["out_of_range"]},
        )
    return minutes


def backoff(interval_minutes: int, failures: int) -> timedelta:
    """How long to wait after the `failures`-th failure in a row: the interval doubled per
    failure, at most MIRROR_MAX_BACKOFF (and never less than the interval)."""
    doubled = timedelta(minutes=interval_minutes) * 2 ** min(max(failures, 0), _MAX_DOUBLINGS)
    return max(min(doubled, settings.MIRROR_MAX_BACKOFF), timedelta(minutes=interval_minutes))


# --- set up, change, stop ----------------------------------------------------------------------


@transaction.atomic
def mirror_create(*, repo: Repository, url: str, created_by, interval_minutes=None) -> Mirror:
    """Make `repo` track `url`. The first sync is due at once (beat, or mirror_sync_request):
    it makes the branches and tags those of the upstream, deleting the ones it lacks, and the
    pushlog records it as a push by "mirror"."""
    if repo.deleted_at is not None:
        raise Conflict("A deleted repository cannot become a mirror.", code="deleted")
    _require_admin(created_by, repo)
    source = check_url(url, actor=created_by)
    interval = check_interval(interval_minutes)
    if Mirror.objects.filter(repository=repo).exists():
        raise Conflict(
            f"{repo.full_name} already mirrors an upstream; change or stop that mirror first.",
            code="already_mirror",
        )
    try:
        with transaction.atomic():
            return Mirror.objects.create(
                repository=repo,
                url=source.display_url,
                interval_minutes=interval,
                created_by=created_by,
                next_sync_at=timezone.now(),
            )
    except IntegrityError:  # a concurrent request set one up first
        raise Conflict(f"{repo.full_name} already mirrors an upstream.", code="already_mirror") from None


@transaction.atomic
def mirror_update(
    *, mirror: Mirror, actor, url: str | None = None, interval_minutes=None, enabled: bool | None = None
) -> Mirror:
    """Change the upstream, the interval, or pause (enabled=False: no syncs, and the branches
    accept pushes again) and resume (a sync is due at once)."""
    _require_admin(actor, mirror.repository)
    now = timezone.now()
    changes: dict = {}
    if url is not None and url.strip() != mirror.url:
        source = check_url(url, actor=actor)
        # A new upstream starts afresh; whoever set it is whose rights the sync checks it with.
        changes.update(
            url=source.display_url, created_by=actor, consecutive_failures=0, last_error="", next_sync_at=now
        )
    if interval_minutes is not None and interval_minutes != "":
        interval = check_interval(interval_minutes)
        changes["interval_minutes"] = interval
        if "next_sync_at" not in changes and not mirror.failing:
            changes["next_sync_at"] = max(now, (mirror.last_sync_at or now) + timedelta(minutes=interval))
    if enabled is not None and bool(enabled) != mirror.enabled:
        changes["enabled"] = bool(enabled)
        if enabled:
            changes["next_sync_at"] = now
    if changes:
        Mirror.objects.filter(pk=mirror.pk).update(**changes)
        mirror.refresh_from_db()
    return mirror


@transaction.atomic
def mirror_delete(*, mirror: Mirror, actor) -> None:
    """Stop mirroring: the repository becomes a normal one and keeps its refs."""
    _require_admin(actor, mirror.repository)
    Mirror.objects.filter(pk=mirror.pk).delete()


def syncing(mirror: Mirror, now: datetime | None = None) -> bool:
    """A sync holds the mirror (a claim younger than MIRROR_STALE_CLAIM)."""
    now = now or timezone.now()
    return mirror.claimed_at is not None and mirror.claimed_at >= now - settings.MIRROR_STALE_CLAIM


def mirror_sync_request(*, mirror: Mirror, actor) -> None:
    """ "Sync now": enqueue a sync once this transaction commits."""
    _require_admin(actor, mirror.repository)
    mirror.refresh_from_db()
    if not mirror.enabled:
        raise Conflict("The mirror is paused; resume it to sync.", code="paused")
    if syncing(mirror):
        raise Conflict("A sync is running; its result shows here when it ends.", code="syncing")
    mirror_id = mirror.pk
    enqueue.after_commit("repos.tasks.sync_mirror", mirror_id)


# --- scheduling ----------------------------------------------------------------------------------


def mirrors_due(now: datetime | None = None):
    """Enabled mirrors of live repositories whose next sync is due and that no sync holds."""
    now = now or timezone.now()
    stale = now - settings.MIRROR_STALE_CLAIM
    return Mirror.objects.filter(
        enabled=True, next_sync_at__lte=now, repository__deleted_at__isnull=True
    ).filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=stale))


def schedule_due(now: datetime | None = None, limit: int = 1000) -> list[int]:
    """The due mirrors, each taken for this run by moving its next sync one interval on (a
    conditional UPDATE): a sync still waiting in the queue is not enqueued again by the next
    beat, and one that was lost comes due again after its interval. The sync sets the real
    next time when it ends."""
    now = now or timezone.now()
    taken = []
    rows = mirrors_due(now).order_by("next_sync_at").values_list("pk", "next_sync_at", "interval_minutes")
    for pk, due, interval in rows[:limit]:
        moved = Mirror.objects.filter(pk=pk, next_sync_at=due).update(
            next_sync_at=now + timedelta(minutes=interval)
        )
        if moved:
            taken.append(pk)
    return taken


# --- syncing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncResult:
    # synced (refs moved: push_id), unchanged, failed (error), busy (another sync holds the
    # mirror, or the repository's lock stayed taken), skipped (paused, gone, repository deleted)
    outcome: str
    push_id: int | None = None
    error: str = ""
    objects: int = 0


def sync_mirror(mirror: Mirror) -> SyncResult:
    """Bring the upstream's branches and tags, record what moved; on failure move nothing, note
    why and back off. One sync at a time per mirror; the claim is always released."""
    if not Mirror.objects.filter(pk=mirror.pk, enabled=True).exists():
        return SyncResult("skipped")
    # The exclusion is the repository's mirror claim (repos.locking): it dies with its holder.
    held = locking.claim("mirror", mirror.repository_id)
    if held is None:
        return SyncResult("busy")
    now = timezone.now()
    # A record for the pages ("syncing") and the scheduler; the claim above excludes.
    Mirror.objects.filter(pk=mirror.pk).update(claimed_at=now)
    try:
        mirror = Mirror.objects.select_related("repository__owner", "created_by").filter(pk=mirror.pk).first()  # type: ignore[assignment]
        if mirror is None or mirror.repository.deleted_at is not None:
            return SyncResult("skipped")
        try:
            # Checked again at each sync: DNS may point elsewhere now. Whoever set the URL is
            # whose rights it is checked with (staff may mirror local paths).
            source = check_url(mirror.url, actor=mirror.created_by, probe=True)
            synced = mirror_sync.fetch_and_record(mirror, source)
        except RepositoryBusy as exc:
            # Maintenance or a merge holds the repository: not the upstream's fault, no backoff.
            Mirror.objects.filter(pk=mirror.pk).update(next_sync_at=timezone.now() + BUSY_RETRY)
            return SyncResult("busy", error=exc.message)
        except (ServiceError, GitError) as exc:  # FetchFailed, SourceRefused, a git step
            error = scrub(getattr(exc, "message", None) or f"git failed: {exc.stderr.strip()[-500:]}")  # type: ignore[union-attr]  # ServiceError has .message
            _record_failure(mirror, timezone.now(), error)
            return SyncResult("failed", error=error)
        _record_success(mirror, timezone.now())
        if synced.objects >= settings.REPACK_FRESH_AFTER_OBJECTS:
            enqueue.after_commit("repos.tasks.repack_fresh", mirror.repository_id)
        return SyncResult("synced" if synced.push_id else "unchanged", synced.push_id, objects=synced.objects)
    finally:
        Mirror.objects.filter(pk=mirror.pk, claimed_at=now).update(claimed_at=None)
        held.release()


def _record_success(mirror: Mirror, now: datetime) -> None:
    Mirror.objects.filter(pk=mirror.pk).update(
        last_sync_at=now,
        last_success_at=now,
        consecutive_failures=0,
        last_error="",
        next_sync_at=now + timedelta(minutes=mirror.interval_minutes),
    )
    if mirror.consecutive_failures:
        _announce(mirror, failing=False)


def _record_failure(mirror: Mirror, now: datetime, error: str) -> None:
    failures = mirror.consecutive_failures + 1
    Mirror.objects.filter(pk=mirror.pk).update(
        last_sync_at=now,
        last_error=error[:2000],
        consecutive_failures=failures,
        next_sync_at=now + backoff(mirror.interval_minutes, failures),
    )
    if failures == 1:  # the first of a streak; the page shows the rest
        _announce(mirror, failing=True, error=error)


def _announce(mirror: Mirror, *, failing: bool, error: str = "") -> None:
    repo_id = mirror.repository_id
    transaction.on_commit(
        lambda: signals.mirror_status_changed.send_robust(
            sender=Mirror, repository_id=repo_id, failing=failing, error=error
        )
    )
