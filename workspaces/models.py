"""Workspaces: per-repository settings, protected branches, and each user's workspace state."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models import Repository


class WorkspaceSettings(models.Model):
    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="workspace_settings")
    maintainers_may_edit = models.BooleanField(
        default=True, help_text="Maintainers may push to other users' workspaces (admins always may)."
    )
    ref_limit = models.PositiveIntegerField(null=True, blank=True, help_text="Refs per user; empty: site default")

    def __str__(self) -> str:
        return f"workspace settings of {self.repository}"


class ProtectedBranch(models.Model):
    """Cannot be deleted or moved by non-fast-forward, unless an admin allows force."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="protected_branches")
    name = models.CharField(max_length=255)
    allow_force = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "name", name="protected_branch_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.repository}:{self.name}"


class WorkspaceState(models.TextChoices):
    ACTIVE = "active", "active"
    FROZEN = "frozen", "frozen"
    HIDDEN = "hidden", "hidden"
    TAKEN_DOWN = "taken_down", "taken down"


class Workspace(models.Model):
    """One user's workspace on one repository (refs/users/<username>/*). The refs live in git;
    this row holds what git cannot: moderation state and push statistics."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="workspaces")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    state = models.CharField(max_length=20, choices=WorkspaceState.choices, default=WorkspaceState.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_push_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "user", name="workspace_unique")]

    def __str__(self) -> str:
        return f"{self.user} on {self.repository} ({self.state})"

    @property
    def prefix(self) -> str:
        return f"refs/users/{self.user.username}/"
