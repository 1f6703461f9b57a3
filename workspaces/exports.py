"""Contributors' work in a deleted repository (issue 8): who has unmerged work, telling them,
and exporting a workspace as a git bundle while the repository awaits its purge.

Unmerged means a workspace ref whose tip no canonical ref (branch, tag) reaches, found in one
`git for-each-ref --no-merged=<tip>...` over refs/users/ rather than one process per ref. The
export is a bundle of every ref under `refs/users/<username>/` with full history (`git bundle
create --stdin`, so the header names the refs as they were), written to a temporary name under
VAR_DIR/exports and renamed into place.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from gitcore.git import GitError, run_git
from gitcore.gittools import text_ref_map
from notifications.services import notify
from repos import enqueue
from repos.errors import Forbidden, InvalidInput, NotFound
from repos.hooks import refspace
from repos.lifecycle import purge_after
from repos.models import Repository, User
from workspaces.models import Workspace, WorkspaceExport

log = logging.getLogger(__name__)


def exports_root() -> Path:
    return Path(settings.VAR_DIR) / "exports"


def export_file(export: WorkspaceExport) -> Path | None:
    if not export.path:
        return None
    return exports_root() / export.path


def unmerged_workspace_refs(repo: Repository) -> dict[str, list[str]]:
    """username -> workspace refs whose tips no canonical ref reaches."""
    path = repo.disk_path
    if not path.exists():
        return {}
    tips = run_git(
        [
            "for-each-ref",
            "--format=%(objecttype) %(objectname) %(*objecttype) %(*objectname)",
            "refs/heads/",
            "refs/tags/",
        ],
        repo=path,
    ).text
    commits = set()
    for line in tips.splitlines():
        kind, oid, peeled_kind, peeled = [*line.split(" "), "", ""][:4]
        if kind == "commit":
            commits.add(oid)
        elif peeled_kind == "commit":
            commits.add(peeled)
    # for-each-ref takes its --no-merged filters among the patterns.
    unmerged = text_ref_map(path, *(f"--no-merged={oid}" for oid in sorted(commits)), refspace.WORKSPACES)
    found: dict[str, list[str]] = {}
    for ref in unmerged:
        parts = ref.split("/", 3)
        if len(parts) == 4 and parts[3]:
            found.setdefault(parts[2], []).append(ref)
    return found


def user_refs(repo: Repository, username: str) -> list[str]:
    return list(text_ref_map(repo.disk_path, refspace.workspace_prefix(username)))


def notify_contributors(repo: Repository) -> list[str]:
    """Tell every user with unmerged workspace work that the repository was deleted and how to
    get their work out. Returns the usernames told."""
    by_user = unmerged_workspace_refs(repo)
    users = User.objects.filter(username__in=list(by_user), is_active=True)
    until = purge_after(repo)
    told = []
    for user in users:
        count = len(by_user[user.username])
        notify(
            user,
            kind="repository_deleted",
            text=(
                f"{repo.full_name} was deleted. Your workspace there has {count} unmerged "
                f"ref{'s' if count != 1 else ''}: download it as a git bundle before {until:%Y-%m-%d}."
            ),
            url="/settings/workspace-exports",
            repository=repo,
        )
        told.append(user.username)
    return told


def exportable_repository(user, repo_id: int) -> Repository:
    """A deleted (not yet purged) repository in which `user` has workspace refs; NotFound
    otherwise, so nobody learns of deleted repositories they had no work in."""
    repo = Repository.objects.select_related("owner").filter(pk=repo_id, deleted_at__isnull=False).first()
    # A taken-down workspace has no refs under refs/users/ any more: say why, not "no workspace".
    refusal = export_refusal(repo, user) if repo is not None and user.is_authenticated else None
    if refusal:
        raise Forbidden(refusal, code="workspace_moderated")
    if repo is None or not user.is_authenticated or not user_refs(repo, user.username):
        raise NotFound("No workspace of yours to export there.")
    return repo


def exportable_repositories(user) -> list[Repository]:
    """Deleted repositories where the user has (or had) a workspace."""
    if not user.is_authenticated:
        return []
    return list(
        Repository.objects.select_related("owner")
        .filter(deleted_at__isnull=False, workspaces__user=user)
        .order_by("-deleted_at")
        .distinct()
    )


def export_refusal(repo: Repository, user) -> str | None:
    """Why the user may not have a bundle of their workspace, or None. A take-down holds the
    content from its owner too (the refs moved out of refs/users/, and an export must not hand
    them back); a freeze stops writes only, so a frozen workspace may export."""
    if not user.is_active:
        return "This account is deactivated."
    if Workspace.objects.filter(repository=repo, user=user, taken_down=True).exists():
        return (
            f"Your workspace in {repo.full_name} was taken down by a moderator: it cannot be exported. "
            "Contact the site's staff."
        )
    return None


@transaction.atomic
def workspace_export_request(*, repo: Repository, user: User) -> WorkspaceExport:
    """Queue a bundle of the user's workspace; a pending request is reused."""
    if repo.deleted_at is None:
        raise InvalidInput("Exports are for deleted repositories; fetch your workspace with git instead.")
    refusal = export_refusal(repo, user)
    if refusal:
        raise Forbidden(refusal, code="workspace_moderated")
    pending = WorkspaceExport.objects.filter(
        repository=repo, user=user, state=WorkspaceExport.State.PENDING
    ).first()
    if pending is not None:
        return pending
    export = WorkspaceExport.objects.create(repository=repo, user=user)
    enqueue.after_commit("workspaces.tasks.build_workspace_export", export.pk)
    return export


def workspace_export_build(*, export: WorkspaceExport) -> WorkspaceExport:
    repo, username = export.repository, export.user.username
    refs = user_refs(repo, username)
    root = exports_root() / str(repo.pk)
    root.mkdir(parents=True, exist_ok=True)
    name = f"{export.pk}-{username}-{secrets.token_hex(8)}.bundle"
    tmp = root / f".tmp-{name}"
    try:
        # Checked again here: a take-down may have come between the request and the build.
        refusal = export_refusal(repo, export.user)
        if refusal:
            raise InvalidInput(refusal)
        if not refs:
            raise InvalidInput(f"{refspace.workspace_prefix(username)} has no refs in {repo.full_name}.")
        run_git(
            ["bundle", "create", "--quiet", str(tmp), "--stdin"],
            repo=repo.disk_path,
            input="".join(f"{ref}\n" for ref in refs).encode(),
            timeout=settings.BUNDLE_GIT_TIMEOUT,
        )
        os.replace(tmp, root / name)
    except (GitError, InvalidInput) as exc:
        tmp.unlink(missing_ok=True)
        WorkspaceExport.objects.filter(pk=export.pk).update(
            state=WorkspaceExport.State.FAILED, error=str(exc)[:500], finished_at=timezone.now()
        )
        export.refresh_from_db()
        return export
    WorkspaceExport.objects.filter(pk=export.pk).update(
        state=WorkspaceExport.State.READY,
        path=f"{repo.pk}/{name}",
        size=(root / name).stat().st_size,
        ref_count=len(refs),
        finished_at=timezone.now(),
    )
    export.refresh_from_db()
    return export


def exports_purge(repo: Repository) -> None:
    """The repository is being purged: its export files go with it (rows cascade)."""
    shutil.rmtree(exports_root() / str(repo.pk), ignore_errors=True)
