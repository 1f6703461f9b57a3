"""The replication log: one row per change of a repository's refs or objects, numbered per
repository (its generation), written in the transaction that records the change.

Replicas (the replication app) follow it: a replica that holds generation N of a repository
holds every change up to the N-th. What is recorded as a push (git pushes, web merges and
edits, refs removed by admins, mirror syncs, imports, reconciled refs) is a row with its Push, so
the pushlog is the log's push rows (repos.pushlog.logged_pushes); the rest (cleanup, restores,
moderation, purges, maintenance, create, rename, delete) have none.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ChangeKind(models.TextChoices):
    PUSH = "push", "push"  # git over HTTP or SSH
    WEB = "web", "web write"  # a merge, an edit, a ref deleted on the web or the API
    CLEANUP = "cleanup", "merged-ref cleanup"
    RESTORE = "restore", "restore"
    MIRROR = "mirror", "mirror sync"
    IMPORT = "import", "import"
    RECONCILE = "reconcile", "reconciled"  # refs that moved without a push
    MODERATION = "moderation", "moderation"  # freeze, hide, take down, restore a workspace
    TAKEDOWN = "takedown", "take-down"
    PURGE = "purge", "purge"  # objects removed: every replica must confirm
    MAINTENANCE = "maintenance", "maintenance"
    CREATE = "create", "create"
    RENAME = "rename", "rename"
    DELETE = "delete", "delete"
    UNDELETE = "undelete", "undelete"
    PURGE_REPOSITORY = "purge_repository", "repository purged"


# Changes every replica must confirm before the log marks them complete: content removed or
# moved out of reach must be gone everywhere, not only where the moderator acted.
CONFIRMED_KINDS = frozenset({ChangeKind.TAKEDOWN, ChangeKind.PURGE, ChangeKind.PURGE_REPOSITORY})


class RepositoryChange(models.Model):
    id = models.BigAutoField(primary_key=True)
    # No foreign key constraint: a purged repository's rows (its last one says "purged") must
    # outlive it, so that replicas remove their copy.
    repository = models.ForeignKey(
        "repos.Repository", on_delete=models.DO_NOTHING, db_constraint=False, related_name="changes"
    )
    generation = models.BigIntegerField()
    kind = models.CharField(max_length=20, choices=ChangeKind.choices)
    push = models.OneToOneField(
        "repos.Push", on_delete=models.SET_NULL, null=True, blank=True, related_name="change"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    summary = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # Set for CONFIRMED_KINDS once every replica has confirmed it (at once without replicas).
    needs_confirmation = models.BooleanField(default=False)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint("repository", "generation", name="repositorychange_generation_unique")
        ]
        indexes = [
            models.Index(
                fields=["needs_confirmation"],
                name="repositorychange_pending",
                condition=models.Q(needs_confirmation=True, completed_at__isnull=True),
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.generation} of repository {self.repository_id}"
