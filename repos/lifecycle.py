"""A repository's life after creation: soft delete, restore, purge, rename and transfer (issue 8).

Soft delete only stamps `deleted_at`: selectors.can_read then hides the repository from
everyone but staff (pages, API, git), and listings skip it. After
REPOSITORY_DELETE_RETENTION_DAYS the periodic purge removes the repository from disk (moved to
`<REPO_ROOT>/.trash` first, so a half-deleted directory is never at its real path), lets
other apps drop what they keep elsewhere (bundles deletes the objects in bundle storage, S3
included), and deletes the row.

Renames and transfers are database-only (the disk path is the id); the old `owner/name` is
kept in RepositoryRedirect so old URLs and remotes keep working.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from repos import changelog, signals
from repos.audit import Action, record_audit
from repos.errors import Conflict, Forbidden, InvalidInput
from repos.models import ChangeKind, Membership, Repository, RepositoryRedirect, Role, User
from repos.names import validate_repo_name

log = logging.getLogger(__name__)


def purge_after(repo: Repository):
    """When a deleted repository becomes due for purge."""
    return repo.deleted_at + timedelta(days=settings.REPOSITORY_DELETE_RETENTION_DAYS)  # type: ignore[operator]  # asked of deleted repositories only


@transaction.atomic
def repository_soft_delete(*, repo: Repository, acting_user: User) -> Repository:
    if repo.deleted_at is not None:
        return repo
    repo.deleted_at = timezone.now()
    repo.deleted_by = acting_user
    repo.save(update_fields=["deleted_at", "deleted_by"])
    record_audit(actor=acting_user, action=Action.DELETE, repository=repo, target_user=repo.owner)
    # No ref moves, but replicas stop serving it as the primary does.
    changelog.record(repo.pk, ChangeKind.DELETE, actor=acting_user, summary=f"deleted {repo.full_name}")
    log.info("repository %s (%s) deleted by %s", repo.full_name, repo.pk, acting_user)
    repo_id = repo.pk
    transaction.on_commit(
        lambda: signals.repository_deleted.send_robust(sender=Repository, repository_id=repo_id)
    )
    return repo


@transaction.atomic
def repository_restore(*, repo: Repository, acting_user: User) -> Repository:
    """Undo a soft delete. Staff only: a deleted repository is invisible to everyone else."""
    if not acting_user.is_staff:
        raise Forbidden("Only site staff can restore a deleted repository.")
    if repo.deleted_at is None:
        return repo
    repo.deleted_at = None
    repo.deleted_by = None
    repo.save(update_fields=["deleted_at", "deleted_by"])
    record_audit(actor=acting_user, action=Action.RESTORE, repository=repo, target_user=repo.owner)
    changelog.record(
        repo.pk,
        ChangeKind.UNDELETE,
        actor=acting_user,
        summary=f"restored {repo.full_name} after its deletion",
    )
    log.info("repository %s (%s) restored by %s", repo.full_name, repo.pk, acting_user)
    return repo


def repositories_due_for_purge():
    cutoff = timezone.now() - timedelta(days=settings.REPOSITORY_DELETE_RETENTION_DAYS)
    return Repository.objects.filter(deleted_at__isnull=False, deleted_at__lte=cutoff).order_by("pk")


def _trash(path: Path) -> Path | None:
    if not path.exists():
        return None
    trash = settings.REPO_ROOT / ".trash"
    trash.mkdir(parents=True, exist_ok=True)
    target = trash / f"{path.name[:-4]}-{time.time_ns()}.git"
    os.rename(path, target)
    return target


def repository_purge(*, repo_id: int) -> bool:
    """Remove a deleted repository past retention for good: disk, other apps' data (bundle
    objects in storage), rows. Returns False if it was restored, purged already, or not due."""
    trashed: Path | None = None
    try:
        with transaction.atomic():
            repo = repositories_due_for_purge().select_for_update().filter(pk=repo_id).first()
            if repo is None:
                return False
            # Receivers run with the rows still there; one that raises (storage unreachable)
            # aborts this purge and the next run retries.
            signals.repository_purging.send(sender=Repository, repository=repo)
            trashed = _trash(repo.disk_path)
            full_name = repo.full_name
            repo.delete()
            # After the row is gone (the log's rows outlive it; record continues its sequence
            # from them): replicas remove their copy, and each must confirm it did.
            changelog.record(repo_id, ChangeKind.PURGE_REPOSITORY, summary=f"purged {full_name} for good")
    except BaseException:
        if trashed is not None and not repo.disk_path.exists():
            os.rename(trashed, repo.disk_path)
        raise
    if trashed is not None:
        shutil.rmtree(trashed, ignore_errors=True)
    log.info("repository %s purged", repo_id)
    return True


def repository_move(
    *, repo: Repository, acting_user: User, new_owner: User | None = None, new_name: str | None = None
) -> Repository:
    """Rename and/or transfer. The caller checked that `acting_user` is an admin of the
    repository; a transfer also needs the acting user to be the new owner, or staff (nobody
    receives a repository they did not ask for). The old owner stays an admin member."""
    new_owner = new_owner or repo.owner
    new_name = new_name or repo.name
    try:
        validate_repo_name(new_name)
    except ValidationError as exc:
        raise InvalidInput(exc.messages[0], code="invalid", fields={"name": list(exc.messages)}) from None
    transfer = new_owner.pk != repo.owner_id
    if transfer and not (acting_user.pk == new_owner.pk or acting_user.is_staff):
        raise Forbidden(
            "You can only transfer a repository to yourself (site staff can transfer it to anyone).",
            fields={"owner": ["forbidden"]},
        )
    if not transfer and new_name == repo.name:
        return repo
    taken = Repository.objects.filter(owner=new_owner, name__iexact=new_name).exclude(pk=repo.pk)
    if taken.exists():
        raise Conflict(
            f"{new_owner.username}/{new_name} already exists.", code="name_taken", fields={"name": ["taken"]}
        )
    old_owner, old_owner_name, old_name = repo.owner, repo.owner.username, repo.name
    try:
        with transaction.atomic():
            # The repository now answers at its new name itself; a redirect there is stale.
            RepositoryRedirect.objects.filter(
                owner_name__iexact=new_owner.username, name__iexact=new_name
            ).delete()
            if (old_owner_name.lower(), old_name.lower()) != (new_owner.username.lower(), new_name.lower()):
                RepositoryRedirect.objects.filter(
                    owner_name__iexact=old_owner_name, name__iexact=old_name
                ).delete()
                RepositoryRedirect.objects.create(owner_name=old_owner_name, name=old_name, repository=repo)
            repo.owner = new_owner
            repo.name = new_name
            repo.save(update_fields=["owner", "name", "updated_at"])
            if transfer:
                Membership.objects.filter(repository=repo, user=new_owner).delete()
                Membership.objects.update_or_create(
                    repository=repo, user=old_owner, defaults={"role": Role.ADMIN}
                )
            record_audit(
                actor=acting_user,
                action=Action.TRANSFER if transfer else Action.RENAME,
                repository=repo,
                target_user=old_owner,
                detail={"from": f"{old_owner_name}/{old_name}", "to": repo.full_name},
            )
            # Database-only (the disk path is the id), but replicas answer at the new name
            # only once they know of it.
            changelog.record(
                repo.pk,
                ChangeKind.RENAME,
                actor=acting_user,
                summary=f"{'transferred' if transfer else 'renamed'} {old_owner_name}/{old_name} "
                f"to {repo.full_name}",
            )
    except IntegrityError:
        raise Conflict(f"{new_owner.username}/{new_name} already exists.", code="name_taken") from None
    log.info(
        "repository %s moved from %s/%s to %s by %s",
        repo.pk,
        old_owner_name,
        old_name,
        repo.full_name,
        acting_user,
    )
    return repo
