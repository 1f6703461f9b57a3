"""Writes for workspaces: repository workspace settings and branch protection (admins only), and
restoring an archived ref (the owner or an admin, while the workspace's flags allow it)."""

from __future__ import annotations

from django.db import transaction

from repos.errors import Forbidden, InvalidInput
from repos.git import is_valid_refname
from repos.models import Repository
from repos.visibility import refuse_republishing
from workspaces import cleanup
from workspaces.models import ArchivedRef, ProtectedBranch, WorkspaceSettings
from workspaces.selectors import write_refusal


@transaction.atomic
def workspace_settings_update(
    *,
    repo: Repository,
    maintainers_may_edit: bool | None = None,
    ref_limit: int | None = None,
    clear_ref_limit: bool = False,
    delete_merged_refs: bool | None = None,
    branch_pushes_to_workspace: bool | None = None,
) -> WorkspaceSettings:
    ws, _ = WorkspaceSettings.objects.get_or_create(repository=repo)
    if maintainers_may_edit is not None:
        ws.maintainers_may_edit = maintainers_may_edit
    if delete_merged_refs is not None:
        ws.delete_merged_refs = delete_merged_refs
    if branch_pushes_to_workspace is not None:
        ws.branch_pushes_to_workspace = branch_pushes_to_workspace
    if clear_ref_limit:
        ws.ref_limit = None
    elif ref_limit is not None:
        if not 1 <= ref_limit <= 1_000_000:
            raise InvalidInput("The ref limit is between 1 and 1,000,000.", fields={"ref_limit": ["range"]})
        ws.ref_limit = ref_limit
    ws.save()
    return ws


@transaction.atomic
def protected_branch_set(*, repo: Repository, name: str, allow_force: bool = False) -> ProtectedBranch:
    name = (name or "").strip()
    if not name or name.startswith("-") or not is_valid_refname(f"refs/heads/{name}"):
        raise InvalidInput(f"{name!r} is not a valid branch name.", fields={"name": ["invalid"]})
    branch, _ = ProtectedBranch.objects.update_or_create(
        repository=repo, name=name, defaults={"allow_force": allow_force}
    )
    return branch


@transaction.atomic
def protected_branch_remove(*, repo: Repository, name: str) -> bool:
    deleted, _ = ProtectedBranch.objects.filter(repository=repo, name=name).delete()
    return bool(deleted)


def archived_ref_restore(*, archived: ArchivedRef, user, name: str | None = None) -> str:
    """Bring an archived ref back into its workspace. Restoring adds to the workspace as a push
    would, so the workspace's moderation flags apply: a freeze refuses its owner, a take-down
    everyone, and a deactivated account can do nothing."""
    reason = write_refusal(archived.repository, archived.username, actor=user, what="restoring a deleted ref")
    if reason:
        raise Forbidden(reason, code="workspace_moderated")
    refuse_republishing(archived.repository, user, [archived.sha])
    return cleanup.restore(archived, user=user, name=name)
