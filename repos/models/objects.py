"""What the object checks (repos.objectcheck) decided about a repository's history."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models.core import Repository


class ObjectCheckOverride(models.Model):
    """Staff set one fsck message id's severity for one repository.

    Append-only: the newest row per message id is in force, and the rows are the audit trail
    (who, when, why). A row with an empty severity returns that id to the platform's default.
    """

    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="object_check_overrides"
    )
    msg_id = models.CharField(max_length=64)
    severity = models.CharField(max_length=10, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.msg_id}={self.severity or 'default'} on {self.repository_id} by {self.actor}"


class LegacyObject(models.Model):
    """An object in a legacy format that the checks accepted (a warning, not a refusal),
    recorded so admins can see what their history carries."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="legacy_objects")
    oid = models.CharField(max_length=64)
    msg_id = models.CharField(max_length=64)
    # How it arrived: push, import, mirror.
    source = models.CharField(max_length=20)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint("repository", "oid", "msg_id", name="legacy_object_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.oid[:12]} {self.msg_id} in {self.repository_id}"
