"""In-app notifications (email later): one row per thing a user should know about."""

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

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread")]

    def __str__(self) -> str:
        return f"{self.user}: {self.text}"
