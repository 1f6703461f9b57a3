"""Blocked content: trees and blobs staff list so that no push or web write publishes them in
the repository again, whatever history carries them (workspaces.visibility.republish).

A take-down blocks its own commits already; this list is for what a legal request names by
content (a DMCA notice names files, and a file is a blob, or a directory's tree). Staff only,
each change audited with the id, its type and the reason. The empty blob and the empty tree
can never be blocked: every repository that holds an empty file or directory would refuse
pushes for it.
"""

from __future__ import annotations

from django.db import transaction

from gitcore.catfile import info as object_info
from gitcore.git import run_git
from gitcore.oids import object_format
from repos.audit import record_audit
from repos.errors import Conflict, InvalidInput, NotFound
from repos.models import AuditEntry, Repository
from workspaces.models import BlockedObject, ModerationAction
from workspaces.moderation_common import check_action
from workspaces.visibility.republish import MAX_BLOCKED

BLOCKABLE = ("blob", "tree")


def empty_objects(repo: Repository) -> set[str]:
    """The empty blob's and the empty tree's ids in this repository's format."""
    path = repo.disk_path
    blob = run_git(["hash-object", "-t", "blob", "--stdin"], repo=path, input=b"").text.strip()
    tree = run_git(["hash-object", "-t", "tree", "--stdin"], repo=path, input=b"").text.strip()
    return {blob, tree}


def do_block_content(*, repo: Repository, oid: str, acting_user, reason: str) -> AuditEntry:
    """Add a tree or blob that exists in the repository to its blocked content."""
    reason = check_action(acting_user, repo, ModerationAction.BLOCK_CONTENT, reason)
    fmt = object_format(repo.disk_path)
    sha = fmt.parse((oid or "").strip())
    if sha is None:
        raise InvalidInput(f"Give a whole object id ({fmt.hexsz} hex digits).", fields={"oid": ["invalid"]})
    found = object_info(repo.disk_path, sha)
    if found is None:
        raise NotFound(f"No object {sha} in {repo.full_name}.", fields={"oid": ["not_found"]})
    if found.type not in BLOCKABLE:
        raise InvalidInput(
            f"{sha} is a {found.type}: only trees and blobs are blocked by id (a take-down blocks "
            "its commits).",
            fields={"oid": ["invalid"]},
        )
    if sha in empty_objects(repo):
        raise InvalidInput(f"The empty {found.type} cannot be blocked.", fields={"oid": ["invalid"]})
    with transaction.atomic():
        if BlockedObject.objects.select_for_update().filter(repository=repo).count() >= MAX_BLOCKED:
            raise Conflict(f"{repo.full_name} already blocks {MAX_BLOCKED} objects, the most it may.")
        _row, created = BlockedObject.objects.get_or_create(
            repository=repo,
            oid=sha,
            defaults={"object_type": found.type, "reason": reason, "created_by": acting_user},
        )
        if not created:
            raise Conflict(f"{sha} is blocked already.")
        return record_audit(
            actor=acting_user,
            action=ModerationAction.BLOCK_CONTENT,
            repository=repo,
            reason=reason,
            detail={"oid": sha, "type": found.type},
        )


def do_unblock_content(*, repo: Repository, oid: str, acting_user, reason: str) -> AuditEntry:
    """Take an object off the repository's blocked content."""
    reason = check_action(acting_user, repo, ModerationAction.UNBLOCK_CONTENT, reason)
    sha = object_format(repo.disk_path).parse((oid or "").strip())
    with transaction.atomic():
        row = BlockedObject.objects.select_for_update().filter(repository=repo, oid=sha).first()
        if sha is None or row is None:
            raise NotFound(
                f"{(oid or '')[:80]!r} is not blocked in {repo.full_name}.", fields={"oid": ["not_found"]}
            )
        row.delete()
        return record_audit(
            actor=acting_user,
            action=ModerationAction.UNBLOCK_CONTENT,
            repository=repo,
            reason=reason,
            detail={"oid": sha, "type": row.object_type},
        )
