"""Notifications: one row per thing a user should know about, shown on the site and, as each
user prefers per kind, mailed at once or in a daily digest. Subscriptions say who follows a
proposal or a repository beyond those it concerns directly."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models import Repository

TEXT_MAX = 500


class Notification(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=40)  # e.g. ref_archived, workspace_frozen
    text = models.CharField(max_length=TEXT_MAX)
    url = models.CharField(max_length=500, blank=True)
    # SET_NULL: a notification about a repository that is gone still says what happened.
    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What it is about, as "<kind>:<id>" (e.g. "proposal:12"): mail about one subject is one
    # thread in mail clients, and subscriptions name subjects the same way.
    subject = models.CharField(max_length=60, blank=True)
    # Markdown-free plain text of the comment or report it quotes, for the mail body.
    body = models.TextField(blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread")]

    def __str__(self) -> str:
        return f"{self.user}: {self.text}"


class Delivery(models.TextChoices):
    WEB = "web", "on the site only"
    EMAIL = "email", "on the site and by email"
    DIGEST = "digest", "on the site and in a daily email digest"


class Preference(models.Model):
    """How one user wants one kind of notification; no row: the kind's default."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    kind = models.CharField(max_length=40)
    delivery = models.CharField(max_length=10, choices=Delivery.choices)

    class Meta:
        constraints = [models.UniqueConstraint("user", "kind", name="notification_preference_unique")]

    def __str__(self) -> str:
        return f"{self.user}: {self.kind} {self.delivery}"


class Subscription(models.Model):
    """A user follows a subject ("proposal:<id>", "repository:<id>"), or with subscribed=False
    has muted one they would otherwise hear about."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subscriptions")
    subject = models.CharField(max_length=60)
    subscribed = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("user", "subject", name="subscription_unique")]
        indexes = [models.Index(fields=["subject", "subscribed"], name="subscription_subject")]

    def __str__(self) -> str:
        return f"{self.user} {'follows' if self.subscribed else 'muted'} {self.subject}"
