"""repos' events that become notifications: each receiver only enqueues a task
(notifications.tasks) once its transaction commits. notifications depends on repos only: the
workspace events it tells people about are turned into notifications by workspaces, through
notifications.services."""

from __future__ import annotations

from django.dispatch import receiver

from repos import enqueue
from repos.signals import mirror_status_changed


@receiver(mirror_status_changed)
def mirror_status(sender, repository_id: int, failing: bool, error: str = "", **_kwargs) -> None:
    enqueue.after_commit("notifications.tasks.notify_mirror_status", repository_id, failing, error)
