"""Thin Celery tasks for notifications: repos' events told to the people they concern, and
notification mail (notifications.mailer)."""

from __future__ import annotations

import smtplib

from celery import shared_task

from notifications import mailer, services
from repos import enqueue
from repos.models import Repository

# SMTPException is an OSError; both are named because both are why a send is retried: the
# server refused for now (4xx), dropped the connection, or could not be reached.
_TRANSIENT = (smtplib.SMTPException, OSError)


@shared_task(acks_late=True, ignore_result=True)
def notify_mirror_status(repository_id: int, failing: bool, error: str = "") -> str:
    repo = (
        Repository.objects.select_related("owner").filter(pk=repository_id, deleted_at__isnull=True).first()
    )
    if repo is None:
        return "gone"
    return f"told {services.mirror_status_notify(repo=repo, failing=failing, error=error)}"


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=_TRANSIENT,
    retry_backoff=30,
    retry_backoff_max=3600,
    retry_jitter=True,
    max_retries=8,
)
def send_notification_email(notification_id: int) -> str:
    return mailer.send_notification(notification_id)


@shared_task(acks_late=True, ignore_result=True)
def send_digests() -> str:
    """Beat: one task per user, so one user's failing mail server delays nobody else's digest."""
    users = mailer.digest_candidates()
    for user_id in users:
        enqueue.send("notifications.tasks.send_digest", user_id)
    return f"queued {len(users)}"


@shared_task(
    acks_late=True,
    ignore_result=True,
    autoretry_for=_TRANSIENT,
    retry_backoff=60,
    retry_backoff_max=3600,
    retry_jitter=True,
    max_retries=8,
)
def send_digest(user_id: int) -> str:
    return mailer.send_digest(user_id)
