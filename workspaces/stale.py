"""Stale workspace refs: refs whose tip the repository's default branch already has, so they
hold nothing to propose. The usual one is a `main` copy: a contributor whose branch pushes map
to their workspace pushes `main` too, and refs/users/<them>/main then sits at (or behind) main.

Merged-ref cleanup (workspaces.cleanup) leaves them alone on purpose: it archives a ref when a
branch update *brings* its work (`--merged=<new> --no-merged=<old>`), and a ref that was on the
branch already when it was pushed is indistinguishable from a start point someone is about to
build on. So they are flagged instead (workspace page, dashboard), and their owner cleans them
up with one click through the same archive: compare-and-delete, recorded as an ArchivedRef,
restorable until it expires.
"""

from __future__ import annotations

from collections.abc import Iterable

from gitcore.git import GitError
from gitcore.gittools import text_ref_map
from repos.errors import Forbidden
from repos.hooks import refspace
from repos.locking import repository_lock
from repos.models import Repository
from workspaces.cleanup import archive_landed
from workspaces.landing import Landed
from workspaces.models import ArchivedRef
from workspaces.selectors import write_refusal

STALE = "stale"  # ArchivedRef.how of a ref cleaned up by its owner because it was already on the branch


def stale_refs(repo: Repository, username: str) -> dict[str, str]:
    """ref -> tip of `username`'s workspace refs whose tip the default branch already has: one
    for-each-ref (an ancestry filter over all of them), whatever the number of refs."""
    branch = f"refs/heads/{repo.default_branch}"
    try:
        return text_ref_map(repo.disk_path, f"--merged={branch}", refspace.workspace_prefix(username))
    except GitError:
        return {}  # no default branch yet (an empty repository): nothing is on it


def stale_refs_archive(*, repo: Repository, user, refs: Iterable[str]) -> list[ArchivedRef]:
    """Archive those of `refs` (in `user`'s own workspace) that are stale now. Staleness is
    checked again under the repository's lock, and each deletion is compare-and-delete at the
    tip checked: a ref pushed to meanwhile is kept."""
    wanted = set(refs)
    prefix = refspace.workspace_prefix(user.username)
    if any(not ref.startswith(prefix) for ref in wanted):
        raise Forbidden("You can clean up stale refs of your own workspace only.", code="not_your_ref")
    refusal = write_refusal(repo, user.username, actor=user, what="cleaning up refs")
    if refusal:
        raise Forbidden(refusal, code="workspace_moderated")
    if not wanted:
        return []
    with repository_lock(repo.pk, purpose=f"clean up stale refs of {user.username}", timeout=30):
        stale = stale_refs(repo, user.username)
        landed = [Landed(ref, stale[ref], STALE) for ref in sorted(wanted) if ref in stale]
        return archive_landed(repo, repo.default_branch, landed, push=None, deleted_by=user)
