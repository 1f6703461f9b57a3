"""Reads: a user's notifications (as they may read them now) and their unread count, how they
want each kind delivered, and who follows or muted a subject."""

from __future__ import annotations

import copy
from collections.abc import Iterable

from django.db.models import QuerySet

from notifications import subjects
from notifications.kinds import KINDS, default_delivery
from notifications.models import Notification, Preference, Subscription

REMOVED = "Content removed"


def notifications_for(user, *, unread_only: bool = False) -> QuerySet[Notification]:
    rows = Notification.objects.filter(user=user).select_related("repository", "repository__owner")
    return rows.filter(read_at__isnull=True) if unread_only else rows


def as_shown(rows: Iterable[Notification], user) -> list[Notification]:
    """The notifications as `user` may read them now, for the page, the API and the mail.

    A notification keeps the title, quoted text and link of its subject as they were when it
    was made. If `user` may no longer see that subject (a proposal whose workspace was hidden
    or taken down since, a repository they lost access to or that was deleted), it shows
    REMOVED instead, with no quote and no link. The subject's resolver (notifications.subjects)
    decides, with the same visibility rule as the subject's own pages, so staff, who see all
    moderated work, keep the original. The rows returned are copies, for display only."""
    visible: dict[str, bool] = {}
    shown = []
    for n in rows:
        if n.subject and n.subject not in visible:
            visible[n.subject] = subjects.resolve(n.subject, user) is not None
        if n.subject and not visible[n.subject]:
            n = copy.copy(n)
            n.text, n.body, n.url = REMOVED, "", ""
        shown.append(n)
    return shown


def unread_count(user) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notification.objects.filter(user=user, read_at__isnull=True).count()


def delivery_for(user, kind: str) -> str:
    chosen = Preference.objects.filter(user=user, kind=kind).values_list("delivery", flat=True).first()
    return chosen or default_delivery(kind)


def deliveries_for(user) -> dict[str, str]:
    """Every listed kind's delivery for `user`, in the order of notifications.kinds."""
    chosen = dict(Preference.objects.filter(user=user).values_list("kind", "delivery"))
    return {kind.name: chosen.get(kind.name, kind.default) for kind in KINDS}


def subscription_state(user, subject: str) -> bool | None:
    """True: follows; False: muted; None: neither (only what concerns them directly)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return (
        Subscription.objects.filter(user=user, subject=subject).values_list("subscribed", flat=True).first()
    )


def followers(subject: str) -> set[int]:
    return set(
        Subscription.objects.filter(subject=subject, subscribed=True).values_list("user_id", flat=True)
    )


def muted(subjects: Iterable[str]) -> set[int]:
    return set(
        Subscription.objects.filter(subject__in=list(subjects), subscribed=False).values_list(
            "user_id", flat=True
        )
    )


def subscriptions_of(user) -> QuerySet[Subscription]:
    return Subscription.objects.filter(user=user).order_by("subject")
