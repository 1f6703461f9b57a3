"""Reads: a user's notifications and their unread count."""

from __future__ import annotations

from django.db.models import QuerySet

from notifications.models import Notification


def notifications_for(user, *, unread_only: bool = False) -> QuerySet[Notification]:
    rows = Notification.objects.filter(user=user).select_related("repository", "repository__owner")
    return rows.filter(read_at__isnull=True) if unread_only else rows


def unread_count(user) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notification.objects.filter(user=user, read_at__isnull=True).count()
