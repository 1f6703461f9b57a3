"""Other apps' events that become notifications."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.dispatch import receiver
from django.urls import reverse

from notifications.services import notify
from repos.signals import mirror_status_changed
from workspaces.signals import workspace_ref_archived

log = logging.getLogger(__name__)


@receiver(workspace_ref_archived)
def ref_archived(
    sender, repository_id: int, ref: str, sha: str, push_id: int | None = None, reason: str = "", **_kwargs
) -> None:
    """Merged-ref cleanup deleted a workspace ref: its owner hears about it, always (even when
    they landed it themselves: it is their ref, and the page is where they restore it)."""
    from workspaces.models import ArchivedRef

    try:
        archived = (
            ArchivedRef.objects.filter(repository_id=repository_id, ref=ref, sha=sha)
            .select_related("repository", "repository__owner")
            .order_by("-id")
            .first()
        )
        if archived is None:
            return
        owner = get_user_model().objects.filter(username=archived.username).first()
        if owner is None:
            return
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
    except Exception:
        log.exception("could not notify about archived ref %s", ref)


@receiver(mirror_status_changed)
def mirror_status(sender, repository_id: int, failing: bool, error: str = "", **_kwargs) -> None:
    """A pull mirror's sync started failing, or works again: its repository's admins hear of it
    once per streak (the repository page shows the rest)."""
    from repos.models import Repository, Role
    from repos.selectors import members

    try:
        repo = (
            Repository.objects.select_related("owner")
            .filter(pk=repository_id, deleted_at__isnull=True)
            .first()
        )
        if repo is None:
            return
        url = reverse("mirror-settings", args=[repo.owner.username, repo.name])
        if failing:
            kind, text = "mirror_failing", f"The mirror of {repo.full_name} cannot sync: {error}"
        else:
            kind, text = "mirror_recovered", f"The mirror of {repo.full_name} syncs again."
        for user, role in members(repo):
            if role == Role.ADMIN and user.is_active:
                notify(user, kind=kind, repository=repo, url=url, text=text)
    except Exception:
        log.exception("could not notify about the mirror of repository %s", repository_id)
