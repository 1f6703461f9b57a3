"""Writes for workspaces: repository workspace settings and branch protection (admins only), and
restoring an archived ref (the owner or an admin, while the workspace's flags allow it)."""

from __future__ import annotations

from django.db import transaction

from repos.errors import Forbidden, InvalidInput
from repos.git import is_valid_refname
from repos.models import Repository
from repos.models.statuses import CONTEXT_MAX
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


MAX_REQUIRED_APPROVALS = 20
MAX_REQUIRED_CHECKS = 50


def _clean_checks(checks) -> list[str]:
    """Status contexts, trimmed and deduplicated, as CI names them (repos.models.CommitStatus)."""
    if isinstance(checks, str):
        checks = checks.replace(",", "\n").splitlines()
    cleaned: list[str] = []
    for check in checks or []:
        context = str(check).strip()
        if not context:
            continue
        if len(context) > CONTEXT_MAX or any(c < " " or c == "\x7f" for c in context):
            raise InvalidInput(
                f"A check name is 1 to {CONTEXT_MAX} printable characters.",
                fields={"required_checks": ["invalid"]},
            )
        if context not in cleaned:
            cleaned.append(context)
    if len(cleaned) > MAX_REQUIRED_CHECKS:
        raise InvalidInput(
            f"At most {MAX_REQUIRED_CHECKS} required checks.", fields={"required_checks": ["too_many"]}
        )
    return cleaned


@transaction.atomic
def protected_branch_set(
    *,
    repo: Repository,
    name: str,
    allow_force: bool = False,
    required_approvals: int = 0,
    require_code_owners: bool = False,
    required_checks=(),
) -> ProtectedBranch:
    """Protect a branch (or change its protection) and set its merge rules, which reviews asks
    before merging a proposal into it."""
    name = (name or "").strip()
    if not name or name.startswith("-") or not is_valid_refname(f"refs/heads/{name}"):
        raise InvalidInput(f"{name!r} is not a valid branch name.", fields={"name": ["invalid"]})
    if not 0 <= int(required_approvals) <= MAX_REQUIRED_APPROVALS:
        raise InvalidInput(
            f"Required approvals are between 0 and {MAX_REQUIRED_APPROVALS}.",
            fields={"required_approvals": ["range"]},
        )
    branch, _ = ProtectedBranch.objects.update_or_create(
        repository=repo,
        name=name,
        defaults={
            "allow_force": allow_force,
            "required_approvals": int(required_approvals),
            "require_code_owners": bool(require_code_owners),
            "required_checks": _clean_checks(required_checks),
        },
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
