"""Writes for workspaces: repository workspace settings and branch protection (admins only), and
restoring an archived ref (the owner or an admin, while the workspace's flags allow it)."""

from __future__ import annotations

from django.db import transaction

from gitcore.git import is_valid_refname
from repos.errors import Forbidden, InvalidInput
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
    protected_tags: str | list[str] | None = None,
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
    if protected_tags is not None:
        ws.protected_tags = "\n".join(_clean_tag_patterns(protected_tags))
    ws.save()
    return ws


MAX_TAG_PATTERNS = 100
MAX_REQUIRED_APPROVALS = 20
MAX_REQUIRED_CHECKS = 50


def _clean_names(items, *, field: str, bad, invalid: str, most: int, too_many: str) -> list[str]:
    """A list of names from a form (one a line) or the API (a list): trimmed, blanks dropped,
    deduplicated in order; InvalidInput on `field` if one is `bad` or there are over `most`."""
    if isinstance(items, str):
        items = items.splitlines()
    cleaned: list[str] = []
    for item in items or []:
        name = str(item).strip()
        if not name:
            continue
        if bad(name):
            raise InvalidInput(invalid, fields={field: ["invalid"]})
        if name not in cleaned:
            cleaned.append(name)
    if len(cleaned) > most:
        raise InvalidInput(too_many, fields={field: ["too_many"]})
    return cleaned


def _clean_tag_patterns(patterns: str | list[str]) -> list[str]:
    """fnmatch patterns of tag names (v*, release-?), one per line. No whitespace or control
    characters: no tag name holds them, and the push policy reads the list from one
    environment variable, a pattern a line."""
    lines = patterns.splitlines() if isinstance(patterns, str) else patterns or []
    return _clean_names(
        [str(line).strip().removeprefix("refs/tags/") for line in lines],
        field="protected_tags",
        bad=lambda p: len(p) > 255 or any(c.isspace() or c < " " or c == "\x7f" for c in p),
        invalid="A protected tag pattern is 1 to 255 characters, without spaces.",
        most=MAX_TAG_PATTERNS,
        too_many=f"At most {MAX_TAG_PATTERNS} protected tag patterns.",
    )


def _clean_checks(checks) -> list[str]:
    """Status contexts, as CI names them (repos.models.CommitStatus): one a line or
    comma-separated."""
    if isinstance(checks, str):
        checks = checks.replace(",", "\n")
    return _clean_names(
        checks,
        field="required_checks",
        bad=lambda c: len(c) > CONTEXT_MAX or any(ch < " " or ch == "\x7f" for ch in c),
        invalid=f"A check name is 1 to {CONTEXT_MAX} printable characters.",
        most=MAX_REQUIRED_CHECKS,
        too_many=f"At most {MAX_REQUIRED_CHECKS} required checks.",
    )


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
