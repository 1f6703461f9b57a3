"""What follows a push and an archived ref on the workspaces side: the pushers' Workspace rows
(last push), and the owner of an archived ref hears of it. Run by workspaces.tasks."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from notifications.services import notify
from repos.hooks import refspace
from repos.hooks.updates import is_zero
from repos.models import Push, RefUpdate, User
from workspaces.models import ArchivedRef, Workspace


def workspaces_follow_push(*, push: Push) -> tuple[bool, bool]:
    """Record the push on its users' Workspace rows. Returns whether it touched workspaces
    (they are indexed by patch-id) and whether it moved a branch (merged work is cleaned up)."""
    updates = list(RefUpdate.objects.filter(push=push).values_list("ref", "new"))
    names = {ref.split("/", 3)[2] for ref, _new in updates if ref.startswith(refspace.WORKSPACES)}
    for user in User.objects.filter(username__in=names):
        Workspace.objects.update_or_create(
            repository_id=push.repository_id, user=user, defaults={"last_push_at": push.created_at}
        )
    moved_branch = any(ref.startswith("refs/heads/") and not is_zero(new) for ref, new in updates)
    return bool(names), moved_branch


def archived_ref_notify(*, repository_id: int, ref: str, sha: str) -> bool:
    """Merged-ref cleanup deleted a workspace ref: its owner hears about it, always (even when
    they landed it themselves: it is their ref, and the page is where they restore it). Not
    when they cleaned up a stale ref of theirs themselves (workspaces.stale)."""
    archived = (
        ArchivedRef.objects.filter(repository_id=repository_id, ref=ref, sha=sha)
        .select_related("repository", "repository__owner")
        .order_by("-id")
        .first()
    )
    if archived is None:
        return False
    owner = get_user_model().objects.filter(username=archived.username).first()
    if owner is None:
        return False
    if archived.how == "stale" and archived.deleted_by_id == owner.pk:
        return False  # they cleaned up their own stale ref, on a page that told them so
    repo = archived.repository
    url = reverse("workspace-user", args=[repo.owner.username, repo.name, owner.username])
    notify(
        owner,
        kind="ref_archived",
        repository=repo,
        url=url,
        text=f"{ref} was merged into {archived.branch} and deleted; restore it from your workspace page "
        f"until {archived.expires_at:%Y-%m-%d}.",
    )
    return True
