"""The audit log: one row per staff or admin action on someone else's work."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from repos.models.core import Repository


class AuditEntry(models.Model):
    """Written in the same transaction as the change it records (repos.audit.record_audit).

    `action` is one of repos.audit.Action, or an app's own (workspaces' moderation actions).
    The log outlives what it names (SET_NULL), so `detail` carries the names as they were,
    and moderation's `before`/`after` the flags."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=40)
    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    detail = models.JSONField(default=dict)
    # Not auto_now_add: rows carried over from the older moderation log keep their time.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target_user} ({self.created_at:%Y-%m-%d})"
