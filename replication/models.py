"""Nodes and what each replica holds. The log itself is repos.models.RepositoryChange."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class NodeRole(models.TextChoices):
    PRIMARY = "primary", "primary"
    REPLICA = "replica", "replica"


class Node(models.Model):
    """A node of the site, registered by its own heartbeat (replication.nodes)."""

    name = models.CharField(max_length=40, unique=True)
    role = models.CharField(max_length=10, choices=NodeRole.choices)
    # Its internal URL, as PRIMARY_URL names the primary's; informational for replicas.
    url = models.CharField(max_length=300, blank=True)
    # A random id written in the node's REPO_ROOT: a different one there means the disk was
    # wiped or replaced, and what the node held is forgotten (it catches up from scratch).
    disk_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True, db_index=True)
    git_version = models.CharField(max_length=40, blank=True)
    # A retired node no longer counts: its confirmations are not awaited, it gets no jobs.
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["role", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class ReplicaState(models.Model):
    """The generation of a repository a replica holds, and the last attempt to catch up."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="states")
    repository = models.ForeignKey("repos.Repository", on_delete=models.CASCADE, related_name="+")
    generation = models.BigIntegerField(default=0)
    synced_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint("node", "repository", name="replicastate_unique")]

    def __str__(self) -> str:
        return f"{self.node_id} holds {self.repository_id} at {self.generation}"


class ChangeConfirmation(models.Model):
    """A replica's word that a take-down or purge is done on its disk."""

    change = models.ForeignKey(
        "repos.RepositoryChange", on_delete=models.CASCADE, related_name="confirmations"
    )
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="confirmations")
    confirmed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("change", "node", name="changeconfirmation_unique")]

    def __str__(self) -> str:
        return f"{self.node_id} confirmed change {self.change_id}"


class WriteMark(models.Model):
    """The generation of a user's last write to a repository: read-your-writes. A replica
    serves that user the repository only once it holds this generation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    repository = models.ForeignKey("repos.Repository", on_delete=models.CASCADE, related_name="+")
    generation = models.BigIntegerField()
    written_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint("user", "repository", name="writemark_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} wrote {self.repository_id} at {self.generation}"
