"""Writes: create notifications (and queue their mail), mark them read, follow or mute subjects,
and choose how each kind is delivered."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from notifications.email import address_of
from notifications.kinds import BY_NAME
from notifications.models import TEXT_MAX, Delivery, Notification, Preference, Subscription
from notifications.selectors import deliveries_for, delivery_for
from repos import enqueue
from repos.errors import InvalidInput
from repos.models import Repository, Role, User
from repos.selectors import members


def notify(
    user,
    *,
    kind: str,
    text: str,
    url: str = "",
    repository=None,
    actor=None,
    subject: str = "",
    body: str = "",
) -> Notification:
    """One notification for `user`. Callers inside a transaction get it rolled back with them;
    its mail (when the user wants this kind by email at once) is queued once that commits."""
    if len(text) > TEXT_MAX:
        text = text[: TEXT_MAX - 1] + "…"
    notification = Notification.objects.create(
        user=user,
        kind=kind,
        text=text,
        url=url,
        repository=repository,
        actor=actor,
        subject=subject,
        body=body,
    )
    if settings.EMAIL_ENABLED and address_of(user) and delivery_for(user, kind) == Delivery.EMAIL:
        pk = notification.pk
        enqueue.after_commit("notifications.tasks.send_notification_email", pk)
    return notification


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


# --- subscriptions ------------------------------------------------------------------------------


def subscription_set(*, user, subject: str, subscribed: bool) -> Subscription:
    """Follow (True) or mute (False) a subject; callers have checked the user may see it."""
    row, _ = Subscription.objects.update_or_create(
        user=user, subject=subject, defaults={"subscribed": subscribed}
    )
    return row


def subscriptions_follow(*, user_ids: Iterable[int], subject: str) -> None:
    """Those taking part in a subject follow it from now on, as on GitHub; a muted subject
    stays muted (the existing row wins)."""
    rows = [Subscription(user_id=pk, subject=subject, subscribed=True) for pk in set(user_ids) if pk]
    Subscription.objects.bulk_create(rows, ignore_conflicts=True)


# --- preferences --------------------------------------------------------------------------------


@transaction.atomic
def preferences_set(*, user, choices: dict[str, str]) -> None:
    """Set the delivery of the kinds named; every name and value is checked before any is saved.
    Choosing a kind's default removes the row, so later changes of the default reach the user."""
    bad_kinds = sorted(str(k)[:40] for k in choices if k not in BY_NAME)
    if bad_kinds:
        raise InvalidInput(
            f"Unknown notification kind: {', '.join(bad_kinds[:5])}.", fields={"kinds": ["unknown"]}
        )
    bad_values = sorted(k for k, v in choices.items() if v not in Delivery.values)
    if bad_values:
        raise InvalidInput(
            f"Delivery must be one of {', '.join(Delivery.values)} (for {', '.join(bad_values[:5])}).",
            fields={k: ["invalid"] for k in bad_values},
        )
    for kind, delivery in choices.items():
        if delivery == BY_NAME[kind].default:
            Preference.objects.filter(user=user, kind=kind).delete()
        else:
            Preference.objects.update_or_create(user=user, kind=kind, defaults={"delivery": delivery})


def unsubscribe(*, payload: dict) -> str | None:
    """What a signed unsubscribe link (notifications.email) asks: mute its subject, or turn its
    kind (or every digest kind) to the site only. None: the user is gone."""
    user = User.objects.filter(pk=payload["u"], is_active=True).first()
    if user is None:
        return None
    subject = payload.get("s")
    if isinstance(subject, str) and subject:
        subscription_set(user=user, subject=subject, subscribed=False)
        return "You will get no more notifications about this."
    kind = payload.get("k")
    if isinstance(kind, str) and kind in BY_NAME:
        preferences_set(user=user, choices={kind: Delivery.WEB})
        return f"“{BY_NAME[kind].label}” is now shown on the site only."
    digest = [k for k, delivery in deliveries_for(user).items() if delivery == Delivery.DIGEST]
    preferences_set(user=user, choices=dict.fromkeys(digest, Delivery.WEB))
    return "No more daily digests: those notifications are shown on the site only."
