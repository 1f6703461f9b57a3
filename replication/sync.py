"""A replica brings its copy of a repository up to the log (runs on the replica, from
replication.tasks.sync_repository).

One fetch serves every job queued behind it: a job whose generation this node holds already
returns at once ("current"), and jobs that wait for the same (node, repository) lock re-check
after it. The generation recorded is the one read from the database *before* the fetch, never
the job's: repos.changelog commits generation N only once the primary's disk has it, so
whatever the fetch brings holds at least that one. What the log asks beyond the refs is then
done on the copy (a purge's object removal, a maintenance repack, a purged repository's
removal), and the take-downs and purges are confirmed; once every registered replica has
confirmed one, the change is complete.

The fetch is `--atomic`: a fetch killed mid-way updates no ref, and the job, delivered again
(acks late) or retried, starts over.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from bundles import selectors, storage
from bundles.models import Flavor
from gitcore.git import run_git
from replication import nodes
from replication.internal import fetch_token
from replication.models import ChangeConfirmation, Node, ReplicaState
from repos import changelog, locking, objectcheck
from repos.hooks import refspace
from repos.maintenance import remove_unreachable_objects, repack
from repos.models import CONFIRMED_KINDS, ChangeKind, Repository, RepositoryChange
from repos.storage import create_repository_on_disk, remove_repository_from_disk, repository_path

log = logging.getLogger(__name__)

REFSPEC = "+refs/*:refs/*"
# Refs a copy is seeded with from the published bundles; the first fetch (--prune) drops them.
SEED_PREFIX = refspace.REPLICA_SEED
LOCK_WAIT_SECONDS = 600
# The kinds that may move the primary's HEAD (a new default branch is a web change; a mirror
# follows its upstream's; an import takes the source's): after any other, HEAD stays as it was.
HEAD_KINDS = (ChangeKind.WEB, ChangeKind.MIRROR, ChangeKind.IMPORT, ChangeKind.CREATE)
# Kinds whose log rows ask something of the copy beyond its refs.
ACTED_KINDS = (*CONFIRMED_KINDS, ChangeKind.MAINTENANCE, *HEAD_KINDS)

CURRENT, FETCHED, REMOVED, NOT_A_REPLICA = "current", "fetched", "removed", "not a replica"


def lock_kind(node_name: str) -> str:
    """A lock kind per node: locks are shared by every node of the site (PostgreSQL's advisory
    locks live in the one database), and two replicas syncing one repository must not wait
    for each other."""
    return f"sync_{zlib.crc32(node_name.encode()):08x}"


@contextlib.contextmanager
def sync_lock(node_name: str, repo_id: int, timeout: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    deadline = time.monotonic() + timeout
    note = f"sync on {node_name}"
    while (held := locking.claim(lock_kind(node_name), repo_id, note=note)) is None:
        if time.monotonic() >= deadline:
            raise locking.RepositoryBusy(f"another sync of repository {repo_id} on {node_name} holds it")
        time.sleep(0.05)
    with held:
        yield


def internal_url(repo_id: int) -> str:
    return f"{settings.PRIMARY_URL}/_replication/{int(repo_id)}.git"


def auth_env(node_name: str) -> dict[str, str]:
    """The token as git configuration in the environment: never in argv, where `ps` shows it."""
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Bearer {fetch_token(node_name)}",
    }


def _fsck_config(overrides: dict[str, str]) -> list[str]:
    # The same object checks as a push: what the primary accepted (its overrides included)
    # gets in, anything else is refused here too.
    return [
        arg for key, value in objectcheck.git_config("fetch", overrides) for arg in ("-c", f"{key}={value}")
    ]


def fetch(path: Path, repo: Repository, node_name: str, *, set_head: bool = True) -> None:
    run_git(
        [
            *_fsck_config(objectcheck.repository_overrides(repo)),
            # Protocol v0: every ref is wanted anyway, and v0 lists them in the advertisement
            # that v2 needs a request of its own for (ls-refs): two requests to the primary per
            # fetch, not three, and one upload-pack process fewer.
            "-c",
            "protocol.version=0",
            "fetch",
            "--atomic",
            "--prune",
            "--no-tags",
            "--quiet",
            "--no-write-fetch-head",
            "--no-show-forced-updates",
            internal_url(repo.pk),
            REFSPEC,
        ],
        repo=path,
        env=auth_env(node_name),
        timeout=settings.REPLICATION_FETCH_TIMEOUT_SECONDS,
    )
    if set_head:
        run_git(["symbolic-ref", "HEAD", f"refs/heads/{repo.default_branch}"], repo=path)


def seed_from_bundles(path: Path, repo: Repository) -> int:
    """Fill a new copy from the repository's published bundles (base, then incrementals) into
    SEED_PREFIX refs, so the fetch from the primary brings only what they lack. Returns how
    many were used; from a bundle that cannot be read on, the fetch brings the rest."""
    store = storage.get_storage()
    used = 0
    scratch = Path(tempfile.mkdtemp(prefix=f".seed-{repo.pk}-", dir=path.parent))
    try:
        for index, bundle in enumerate(selectors.current_generation(repo, Flavor.STANDARD)):
            try:
                with store.local_copy(bundle.storage_key, scratch) as file:
                    run_git(
                        [
                            *_fsck_config(objectcheck.repository_overrides(repo)),
                            "fetch",
                            "--no-tags",
                            "--quiet",
                            "--no-write-fetch-head",
                            str(file),
                            f"+refs/*:{SEED_PREFIX}{index}/*",
                        ],
                        repo=path,
                        timeout=settings.REPLICATION_FETCH_TIMEOUT_SECONDS,
                    )
            except Exception as exc:
                log.warning("replica seed: bundle %s of repository %s not used: %s", bundle.pk, repo.pk, exc)
                break  # the incrementals after it need it
            used += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return used


def held_generation(node: Node, repo_id: int) -> int | None:
    return (
        ReplicaState.objects.filter(node=node, repository_id=repo_id)
        .values_list("generation", flat=True)
        .first()
    )


def _unconfirmed(node: Node, repo_id: int):
    """Changes of the repository still awaiting confirmations, this node's among them."""
    return RepositoryChange.objects.filter(
        repository_id=repo_id, needs_confirmation=True, completed_at__isnull=True
    ).exclude(confirmations__node=node)


def is_current(node: Node, repo_id: int, generation: int) -> bool:
    held = held_generation(node, repo_id)
    return (
        held is not None
        and held >= generation
        and (repository_path(repo_id) / "HEAD").is_file()
        and not _unconfirmed(node, repo_id).filter(generation__lte=held).exists()
    )


def sync_repository(repository_id: int, generation: int, *, fresh: bool = False) -> str:
    if not nodes.is_replica():
        return NOT_A_REPLICA
    node = nodes.current_node()
    if not fresh and is_current(node, repository_id, generation):
        return CURRENT
    with sync_lock(node.name, repository_id):
        path = repository_path(repository_id)
        if fresh:
            ReplicaState.objects.filter(node=node, repository_id=repository_id).delete()
            if path.exists():
                remove_repository_from_disk(path)
        elif is_current(node, repository_id, generation):
            return CURRENT
        repo = Repository.objects.filter(pk=repository_id).first()
        if repo is None:
            return _remove_copy(node, repository_id)
        try:
            return _sync(node, repo, path)
        except Exception as exc:
            _record_failure(node, repository_id, exc)
            raise


def _sync(node: Node, repo: Repository, path: Path) -> str:
    # Read before the fetch: the primary's disk holds at least this generation.
    target = changelog.current_generation(repo.pk)
    old = held_generation(node, repo.pk) or 0
    seeded = 0
    created = not (path / "HEAD").is_file()
    if created:
        old = 0
        create_repository_on_disk(repo.pk, default_branch=repo.default_branch)
        seeded = seed_from_bundles(path, repo)
    # What the log asks of the copy since what it held, and anything this node has yet to
    # confirm (a confirmation lost with a wiped disk's states, say).
    pending = Q(needs_confirmation=True, completed_at__isnull=True) & ~Q(confirmations__node=node)
    acted = list(
        RepositoryChange.objects.filter(repository_id=repo.pk, generation__lte=target)
        .filter(Q(kind__in=ACTED_KINDS, generation__gt=old) | pending)
        .distinct()
    )
    kinds = {change.kind for change in acted}
    fetch(path, repo, node.name, set_head=created or bool(kinds & set(HEAD_KINDS)))
    # Objects of a bundle that no ref reaches now may be exactly what a later purge removed.
    purged_before = (
        seeded and RepositoryChange.objects.filter(repository_id=repo.pk, kind=ChangeKind.PURGE).exists()
    )
    if ChangeKind.PURGE in kinds or purged_before:
        remove_unreachable_objects(path)
    if ChangeKind.MAINTENANCE in kinds:
        repack(path)
    ReplicaState.objects.update_or_create(
        node=node,
        repository_id=repo.pk,
        defaults={"generation": target, "synced_at": timezone.now(), "error": "", "failures": 0},
    )
    confirm(node, [change for change in acted if change.needs_confirmation])
    return FETCHED


def _remove_copy(node: Node, repo_id: int) -> str:
    """The repository is gone from the database (purged): so is its copy, and every pending
    take-down or purge of it is done here."""
    path = repository_path(repo_id)
    if path.exists():
        remove_repository_from_disk(path)
    ReplicaState.objects.filter(node=node, repository_id=repo_id).delete()
    confirm(node, list(_unconfirmed(node, repo_id)))
    return REMOVED


def _record_failure(node: Node, repo_id: int, exc: Exception) -> None:
    try:
        if not Repository.objects.filter(pk=repo_id).exists():
            return
        state, _ = ReplicaState.objects.get_or_create(node=node, repository_id=repo_id)
        ReplicaState.objects.filter(pk=state.pk).update(error=str(exc)[:500], failures=F("failures") + 1)
    except Exception:
        log.exception("could not record the failed sync of repository %s", repo_id)


def confirm(node: Node, changes: list[RepositoryChange]) -> None:
    """This node's confirmation of each change; a change all registered replicas confirmed is
    complete."""
    for change in changes:
        if change.kind not in CONFIRMED_KINDS:
            continue
        try:
            with transaction.atomic():
                ChangeConfirmation.objects.get_or_create(change=change, node=node)
        except IntegrityError:
            pass  # confirmed by a concurrent run of this node's
        complete_if_confirmed(change.pk)


def complete_if_confirmed(change_id: int) -> bool:
    confirmed = set(ChangeConfirmation.objects.filter(change_id=change_id).values_list("node_id", flat=True))
    awaited = set(nodes.registered_replicas().values_list("pk", flat=True))
    if awaited <= confirmed:
        changelog.complete(change_id)
        return True
    return False
