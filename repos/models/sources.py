"""Where a repository's history comes from when it is not pushed: imports and pull mirrors."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models.core import Repository


class ImportState(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


class RefsMode(models.TextChoices):
    # HEAD, branches and tags: the project, not its host's internals.
    DEFAULT = "default", "branches and tags"
    # Everything else too, kept under refs/imported/ (never advertised). Staff only.
    ALL = "all", "all refs"


class RepositoryImport(models.Model):
    """One import of an existing repository from a URL, run by Celery (sources.importing).

    The row outlives a failed or cancelled import, whose repository is removed: it is where the
    requester reads why. Credentials are never stored here (nor the URL's user-info part).
    """

    repository = models.ForeignKey(
        Repository, null=True, blank=True, on_delete=models.SET_NULL, related_name="imports"
    )
    # owner/name as requested, kept when the repository is gone.
    full_name = models.CharField(max_length=140)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_url = models.CharField(max_length=2000)
    refs_mode = models.CharField(max_length=10, choices=RefsMode.choices, default=RefsMode.DEFAULT)
    # Track the source afterwards as a pull mirror.
    mirror = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=ImportState.choices, default=ImportState.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    # Live progress, as git reports it ("Receiving objects", 45, 1234 of 2742, bytes so far).
    phase = models.CharField(max_length=100, blank=True)
    percent = models.PositiveSmallIntegerField(null=True, blank=True)
    objects_done = models.PositiveBigIntegerField(default=0)
    objects_total = models.PositiveBigIntegerField(default=0)
    bytes_received = models.PositiveBigIntegerField(default=0)
    message = models.TextField(blank=True)
    # What was imported and what was left out (sources.importing.ImportReport.as_dict()).
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"import #{self.pk} of {self.source_url} into {self.full_name} ({self.state})"

    @property
    def active(self) -> bool:
        return self.state in (ImportState.QUEUED, ImportState.RUNNING)


class Mirror(models.Model):
    """The repository tracks an upstream: Celery beat fetches its branches and tags every
    `interval_minutes`, and its canonical refs change only that way (sources.mirrors)."""

    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="mirror")
    url = models.CharField(max_length=2000)
    interval_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    next_sync_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # A sync in progress (conditional UPDATE claim); a stale claim is taken over.
    claimed_at = models.DateTimeField(null=True, blank=True)
    last_sync_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"mirror of {self.url} into {self.repository_id}"

    @property
    def failing(self) -> bool:
        return self.consecutive_failures > 0
