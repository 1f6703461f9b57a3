"""Writes: create notifications and mark them read."""

from __future__ import annotations

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from notifications.models import TEXT_MAX, Notification
from repos.models import Repository, Role
from repos.selectors import members


def notify(user, *, kind: str, text: str, url: str = "", repository=None) -> Notification:
    """One notification for `user`. Callers inside a transaction get it rolled back with them."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1] + "…"
    return Notification.objects.create(user=user, kind=kind, text=text, url=url, repository=repository)


@transaction.atomic
def notification_mark_read(*, user, notification_id: int) -> Notification | None:
    """Mark one of `user`'s notifications read; None when it is not theirs (or not there)."""
    notification = Notification.objects.select_for_update().filter(pk=notification_id, user=user).first()
    if notification is not None and notification.read_at is None:
        notification.read_at = timezone.now()
        notification.save(update_fields=["read_at"])
    return notification


def notifications_mark_all_read(*, user) -> int:
    return Notification.objects.filter(user=user, read_at__isnull=True).update(read_at=timezone.now())


def mirror_status_notify(*, repo: Repository, failing: bool, error: str = "") -> int:
    """A pull mirror's sync started failing, or works again: its repository's admins hear of it
    once per streak (the repository page shows the rest). Returns how many were told."""
    url = reverse("mirror-settings", args=[repo.owner.username, repo.name])
    if failing:
        kind, text = "mirror_failing", f"The mirror of {repo.full_name} cannot sync: {error}"
    else:
        kind, text = "mirror_recovered", f"The mirror of {repo.full_name} syncs again."
    admins = [user for user, role in members(repo) if role == Role.ADMIN and user.is_active]
    for user in admins:
        notify(user, kind=kind, repository=repo, url=url, text=text)
    return len(admins)
