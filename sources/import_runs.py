"""Running a web or API import: the Celery task's work (sources.import_requests asks for it).

The task (`repos.tasks.run_import`) claims the import with a conditional UPDATE, checks the URL
again (DNS can change between the request and the task), lists the source's refs and chooses
(sources.importing), and brings them in under the object checks while writing progress about
once a second and watching for a cancel. On success the repository is usable at once and a
fresh repack is queued; on failure or cancel the repository is removed.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from gitcore.git import GitError
from repos import enqueue, netguard, objectcheck, sealing
from repos.errors import Forbidden, InvalidInput, ServiceError
from repos.models import ImportState, RefsMode, Repository, RepositoryImport
from sources import fetching, importing, mirrors
from sources.import_requests import SEAL_PURPOSE, STALE_AFTER, _remove_repository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    state: str
    retry_in: float | None = None  # another worker holds a fresh claim: try again later


class _ClaimLost(Exception):
    """Another worker took this import over (our heartbeat went stale): stop without touching it."""


# --- the task's work ---------------------------------------------------------------------------


def _claim(import_id: int) -> tuple[RepositoryImport | None, bool, Outcome | None]:
    """(the claimed row, whether it restarts a dead worker's run, or the outcome if not ours)."""
    now = timezone.now()
    stale = Q(state=ImportState.RUNNING) & (
        Q(heartbeat_at__lt=now - STALE_AFTER) | Q(heartbeat_at__isnull=True)
    )
    restarting = RepositoryImport.objects.filter(stale, pk=import_id).exists()
    fresh = dict(
        state=ImportState.RUNNING,
        started_at=now,
        heartbeat_at=now,
        phase="Starting",
        percent=None,
        objects_done=0,
        objects_total=0,
        bytes_received=0,
    )
    if not RepositoryImport.objects.filter(Q(state=ImportState.QUEUED) | stale, pk=import_id).update(**fresh):
        imp = RepositoryImport.objects.filter(pk=import_id).first()
        if imp is None or not imp.active:
            return None, False, Outcome(imp.state if imp else "gone")
        wait = (imp.heartbeat_at + STALE_AFTER - now).total_seconds() if imp.heartbeat_at else 5
        return None, False, Outcome("busy", retry_in=max(5.0, wait + 1))
    return (
        RepositoryImport.objects.select_related("repository__owner", "requested_by").get(pk=import_id),
        restarting,
        None,
    )


class _Tracker:
    """Progress to the row at most every IMPORT_PROGRESS_INTERVAL seconds, each write also a heartbeat and
    a cancel check: one UPDATE that matches only while the run is ours and not cancelled."""

    def __init__(self, imp: RepositoryImport):
        self.pk, self.claim = imp.pk, imp.started_at
        self.progress = fetching.Progress()
        self.written = 0.0

    def _ours(self):
        return RepositoryImport.objects.filter(pk=self.pk, state=ImportState.RUNNING, started_at=self.claim)

    def phase(self, name: str) -> None:
        # Counts stay: after git, "Finishing" still shows what was received.
        self.progress = dataclasses.replace(self.progress, phase=name, percent=None)
        self.write()

    def update(self, progress: fetching.Progress) -> None:
        self.progress = progress

    def write(self) -> None:
        """Raises FetchCancelled when a cancel was asked for, _ClaimLost when another run took over."""
        self.written = time.monotonic()
        p = self.progress
        if (
            self._ours()
            .filter(cancel_requested=False)
            .update(
                phase=p.phase[:100],
                percent=p.percent,
                objects_done=p.done,
                objects_total=p.total,
                bytes_received=p.bytes,
                heartbeat_at=timezone.now(),
            )
        ):
            return
        if self._ours().exists():
            raise fetching.FetchCancelled
        raise _ClaimLost

    def should_cancel(self) -> bool:
        if time.monotonic() - self.written >= settings.IMPORT_PROGRESS_INTERVAL:
            try:
                self.write()
            except fetching.FetchCancelled:
                return True
        return False


def run_import(import_id: int, sealed: str | None) -> Outcome:
    imp, restarting, outcome = _claim(import_id)
    if imp is None:
        return outcome  # type: ignore[return-value]  # set when imp is None
    tracker = _Tracker(imp)
    try:
        repo = _fetch(imp, sealed, tracker, restarting)
    except _ClaimLost:
        return Outcome("taken over")
    except fetching.FetchCancelled:
        return _end(imp, ImportState.CANCELLED, None)
    except (ServiceError, sealing.SealBroken, GitError) as exc:
        reason = getattr(exc, "message", None) or (
            "The source's credentials could not be opened (the import waited too long, or the server's key "
            "changed); start the import again."
            if isinstance(exc, sealing.SealBroken)
            else f"git failed: {fetching._reason(exc.stderr)}"  # type: ignore[union-attr]  # ServiceError has .message
        )
        return _end(imp, ImportState.FAILED, reason)
    except Exception:
        log.exception("import %s failed", import_id)
        return _end(
            imp, ImportState.FAILED, "The import failed because of an error on our side; try again later."
        )
    if imp.mirror:
        _start_mirror(imp, repo)
    return Outcome(ImportState.DONE)


def _fetch(imp: RepositoryImport, sealed: str | None, tracker: _Tracker, restarting: bool) -> Repository:
    repo = imp.repository
    if repo is None or repo.deleted_at is not None:
        raise InvalidInput("The repository was deleted before the import ran.")
    credentials = None
    if sealed:
        opened = sealing.unseal(sealed, purpose=SEAL_PURPOSE)
        credentials = netguard.Credentials(str(opened.get("u", "")), str(opened.get("p", "")))
    requester = imp.requested_by
    staff = bool(requester is not None and requester.is_active and requester.is_staff)
    if imp.refs_mode == RefsMode.ALL and not staff:
        raise Forbidden("Only site staff can import all refs.")
    steps = _Steps()
    tracker.phase("Checking the source")
    source = netguard.prepare(
        imp.source_url,
        staff=staff,
        credentials=credentials,
        allow_private=settings.IMPORT_ALLOW_PRIVATE_SOURCES,
    )
    steps.mark("check")
    tracker.phase("Listing refs")
    remote = fetching.list_remote(source, timeout=importing.LIST_TIMEOUT)
    plan = importing.plan_refs(remote, imp.refs_mode, display=imp.source_url)
    steps.mark("list")
    tracker.phase("Connecting")
    if restarting:
        _drop_partial_packs(repo.disk_path)
    result = importing.transfer(
        repo.disk_path,
        source,
        plan,
        overrides=objectcheck.repository_overrides(repo),
        on_progress=tracker.update,
        should_cancel=tracker.should_cancel,
        max_bytes=settings.IMPORT_MAX_SIZE,
    )
    steps.mark("transfer")
    received = max(tracker.progress.bytes, _pack_bytes(repo.disk_path))
    if received > settings.IMPORT_MAX_SIZE:
        # git finished between two of fetch's checks (a fast source): the cap holds all the same.
        raise importing.too_large(imp.source_url)
    tracker.phase("Finishing")
    report = importing.finish(repo, plan, result, source=imp.source_url, pusher=imp.requested_by)
    with transaction.atomic():
        done = (
            tracker._ours()
            .filter(cancel_requested=False)
            .update(
                state=ImportState.DONE,
                report=report.as_dict(),
                finished_at=timezone.now(),
                phase="Done",
                percent=100,
                message="",
                objects_done=tracker.progress.done,
                objects_total=tracker.progress.total,
                bytes_received=received,
            )
        )
        if not done:
            # Cancelled (or taken over) after git finished: the cancel wins, nothing is kept.
            if tracker._ours().exists():
                raise fetching.FetchCancelled
            raise _ClaimLost
        repo_id = repo.pk
        transaction.on_commit(lambda: _repack(repo_id))
    steps.mark("finish")
    log.info(
        "import %s of %s done: %s, %d objects, %d bytes",
        imp.pk,
        imp.source_url,
        steps,
        tracker.progress.total,
        received,
    )
    return repo


class _Steps:
    """Where an import's time went, for the log: "check 0.01 s, list 0.04 s, transfer 2.1 s"."""

    def __init__(self):
        self.last, self.times = time.monotonic(), []

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.times.append(f"{name} {now - self.last:.2f} s")
        self.last = now

    def __str__(self) -> str:
        return ", ".join(self.times)


def _repack(repo_id: int) -> None:
    enqueue.send("repos.tasks.repack_fresh", repo_id)


def _pack_bytes(path: Path) -> int:
    return sum(pack.stat().st_size for pack in (Path(path) / "objects" / "pack").glob("*.pack"))


def _drop_partial_packs(path: Path) -> None:
    """A dead worker's half-written clone (importing.transfer) or pack only wastes disk."""
    path = Path(path)
    for scratch in path.parent.glob(f".import-{path.name}-*"):
        shutil.rmtree(scratch, ignore_errors=True)
    for tmp in (path / "objects" / "pack").glob("tmp_*"):
        tmp.unlink(missing_ok=True)


def _end(imp: RepositoryImport, state: str, reason: str | None) -> Outcome:
    """Failed or cancelled: the repository goes, the row keeps why (a cancel keeps who)."""
    values = {"state": state, "finished_at": timezone.now(), "phase": ""}
    if reason is not None:
        values["message"] = reason
    ours = RepositoryImport.objects.filter(pk=imp.pk, state=ImportState.RUNNING, started_at=imp.started_at)
    _remove_repository(imp.repository_id, mark=lambda: ours.update(**values))
    return Outcome(state)


def _start_mirror(imp: RepositoryImport, repo: Repository) -> None:
    """Imported "as a pull mirror": from now on the mirror owns the branches and tags."""
    try:
        mirrors.mirror_create(repo=repo, url=imp.source_url, created_by=imp.requested_by)
    except ServiceError as exc:
        RepositoryImport.objects.filter(pk=imp.pk).update(
            message=f"Imported, but the pull mirror could not be set up: {exc.message}"
        )
