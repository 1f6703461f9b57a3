"""Commit statuses: what a CI (or anyone with a status token) reported about one commit, one
row per (repository, commit, context); a new report for the same context replaces the old."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models.core import Repository

CONTEXT_MAX = 255
DESCRIPTION_MAX = 1000
TARGET_URL_MAX = 2000


class StatusState(models.TextChoices):
    PENDING = "pending", "pending"
    SUCCESS = "success", "success"
    FAILURE = "failure", "failure"
    ERROR = "error", "error"


class CommitStatus(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="commit_statuses")
    sha = models.CharField(max_length=64)  # a full object id, lower case
    context = models.CharField(max_length=CONTEXT_MAX, default="default")
    state = models.CharField(max_length=10, choices=StatusState.choices)
    description = models.CharField(max_length=DESCRIPTION_MAX, blank=True)
    target_url = models.CharField(max_length=TARGET_URL_MAX, blank=True)
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["context"]
        constraints = [
            models.UniqueConstraint("repository", "sha", "context", name="commit_status_unique"),
        ]
        indexes = [models.Index(fields=["repository", "sha"], name="commit_status_sha")]

    def __str__(self) -> str:
        return f"{self.sha[:12]} {self.context}: {self.state}"
