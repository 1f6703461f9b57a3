"""Sending notification mail (called by notifications.tasks): each function loads what it
needs, returns quietly when there is nothing to send, and marks what it sent with emailed_at.

Idempotent under redelivery: a notification already marked is not sent again. A worker dying
between the SMTP server's acceptance and the mark sends it twice (at least once, never lost);
both copies carry the same Message-ID, which mail clients use to show one."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from notifications import email
from notifications.models import Delivery, Notification
from notifications.selectors import delivery_for

# A digest gathers the un-mailed notifications of this window (a beat that ran late misses none).
DIGEST_WINDOW = timedelta(days=2)


def send_notification(notification_id: int) -> str:
    if not settings.EMAIL_ENABLED:
        return "email off"
    notification = (
        Notification.objects.select_related("user", "repository__owner", "actor")
        .filter(pk=notification_id)
        .first()
    )
    if notification is None:
        return "gone"
    if notification.emailed_at is not None:
        return "already sent"
    user = notification.user
    to = email.address_of(user)
    if not user.is_active or to is None:
        return "no address"
    if delivery_for(user, notification.kind) != Delivery.EMAIL:
        return "not wanted"  # the preference changed since it was queued
    # SMTP errors raise: the task retries them.
    email.notification_message(notification, to).send(fail_silently=False)
    Notification.objects.filter(pk=notification.pk, emailed_at__isnull=True).update(emailed_at=timezone.now())
    return "sent"


def digest_candidates(now=None) -> list[int]:
    """Users with un-mailed notifications in the window; each one's kinds are checked later."""
    since = (now or timezone.now()) - DIGEST_WINDOW
    return sorted(
        set(
            Notification.objects.filter(
                emailed_at__isnull=True, created_at__gte=since, user__is_active=True
            ).values_list("user_id", flat=True)
        )
    )


def send_digest(user_id: int, now=None) -> str:
    """One mail with the user's un-mailed notifications of the kinds they want as a digest."""
    if not settings.EMAIL_ENABLED:
        return "email off"
    since = (now or timezone.now()) - DIGEST_WINDOW
    rows = list(
        Notification.objects.select_related("user", "repository__owner")
        .filter(user_id=user_id, emailed_at__isnull=True, created_at__gte=since, user__is_active=True)
        .order_by("created_at", "pk")
    )
    if not rows:
        return "nothing"
    user = rows[0].user
    wanted: dict[str, bool] = {}
    for n in rows:
        if n.kind not in wanted:
            wanted[n.kind] = delivery_for(user, n.kind) == Delivery.DIGEST
    rows = [n for n in rows if wanted[n.kind]]
    to = email.address_of(user)
    if not rows or to is None:
        return "nothing"
    email.digest_message(user, rows, to).send(fail_silently=False)
    Notification.objects.filter(pk__in=[n.pk for n in rows], emailed_at__isnull=True).update(
        emailed_at=timezone.now()
    )
    return f"sent {len(rows)}"
