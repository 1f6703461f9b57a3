"""repos' events that become notifications. notifications depends on repos only: the
workspace events it tells people about are turned into notifications by workspaces, through
notifications.services."""

from __future__ import annotations

import logging

from django.dispatch import receiver
from django.urls import reverse

from notifications.services import notify
from repos.models import Repository, Role
from repos.selectors import members
from repos.signals import mirror_status_changed

log = logging.getLogger(__name__)


@receiver(mirror_status_changed)
def mirror_status(sender, repository_id: int, failing: bool, error: str = "", **_kwargs) -> None:
    """A pull mirror's sync started failing, or works again: its repository's admins hear of it
    once per streak (the repository page shows the rest)."""
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
