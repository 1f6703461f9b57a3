"""Clone bundles and their builds.

One Bundle row is one flavor of one bundle: a base or incremental bundle is built twice
(standard zlib pack, and an uncompressed pack inside a zstd-compressed file), so both rows
share a creation_token. A row is listed only in state PUBLISHED, which is set after its object
is in storage and its size and sha256 were read back and matched (DESIGN.md, "Bundles").
"""

from __future__ import annotations

from django.db import models

from repos.models import Repository


class Kind(models.TextChoices):
    BASE = "base", "base"
    INCREMENTAL = "incremental", "incremental"


class Flavor(models.TextChoices):
    STANDARD = "standard", "standard"
    ZSTD = "zstd", "zstd"


class BundleState(models.TextChoices):
    BUILDING = "building", "building"
    PUBLISHED = "published", "published"
    DELETED = "deleted", "deleted"


class Bundle(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="bundles")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    flavor = models.CharField(max_length=10, choices=Flavor.choices)
    # git's bundle.<id>.creationToken: increases with every bundle of the repository.
    creation_token = models.BigIntegerField()
    # Content-addressed (derived from sha256), so a key never names two different objects.
    storage_key = models.CharField(max_length=200, blank=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # refname -> oid of the canonical refs this bundle carries (refs/heads/*, refs/tags/*).
    tips = models.JSONField(default=dict)
    # Commits a client must already have (the boundary of an incremental bundle).
    prerequisites = models.JSONField(default=list)
    commit_count = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=10, choices=BundleState.choices, default=BundleState.BUILDING)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["repository_id", "creation_token", "flavor"]
        indexes = [
            models.Index(fields=["repository", "state", "flavor"]),
            models.Index(fields=["storage_key"]),
        ]
        constraints = [
            models.UniqueConstraint(
                "repository", "creation_token", "flavor", name="bundle_unique_token_flavor"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} bundle {self.creation_token} ({self.flavor}) of {self.repository_id}"

    @property
    def list_id(self) -> str:
        """The bundle's id in a bundle list (`[bundle "<id>"]`): the same for both flavors."""
        return f"{self.kind}-{self.creation_token}"


class BuildState(models.TextChoices):
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    SKIPPED = "skipped", "skipped"
    FAILED = "failed", "failed"


class BundleBuild(models.Model):
    """One run of the build service, for the build history and progress shown to users."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="bundle_builds")
    state = models.CharField(max_length=10, choices=BuildState.choices, default=BuildState.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    progress = models.CharField(max_length=200, blank=True)
    # The lock claim the run holds (bundles.locking: "<host>:<pid>:<nonce>") and when it
    # last renewed it: a RUNNING row whose lock is gone or whose heartbeat is older
    # than BUNDLE_STALE_CLAIM died with its worker (services.bundles_reap_dead_builds).
    claimed_by = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["state"], name="bundlebuild_state")]

    def __str__(self) -> str:
        return f"bundle build {self.pk} of {self.repository_id} ({self.state})"


class BundleLock(models.Model):
    """Who holds the per-repository build lock (repos.locking's "bundles" claim, which decides);
    a row of its own because repos' models belong to the repos app."""

    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, primary_key=True, related_name="bundle_lock"
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # "<host>:<pid>:<nonce>", written by the holder once it has the lock: a name here on a
    # free lock is a dead holder's (bundles.locking).
    claimed_by = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"bundle lock of {self.repository_id}"
