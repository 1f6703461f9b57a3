"""Accounts, access tokens, repositories and their members."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from django.conf import settings
from django.contrib.auth.models import AbstractUser, UserManager
from django.db import models
from django.db.models.functions import Lower

from repos.names import (
    COMMIT_NAME_MAX,
    validate_commit_email,
    validate_commit_name,
    validate_repo_name,
    validate_username,
)
from repos.storage import repository_path


class HostsiteUserManager(UserManager):
    def get_by_natural_key(self, username):
        # Log-in and token look-ups ignore case, as the uniqueness constraint does.
        return self.get(username__iexact=username)


class User(AbstractUser):
    username = models.CharField(
        max_length=39,
        unique=True,
        validators=[validate_username],
        error_messages={"unique": "That username is taken."},
    )
    display_name = models.CharField(max_length=100, blank=True)
    bio = models.TextField(max_length=1000, blank=True)
    # The identity of commits made on the web (workspaces.webedit); blank: the username and
    # username@users.noreply.<host>.
    commit_name = models.CharField(
        max_length=COMMIT_NAME_MAX,
        blank=True,
        validators=[validate_commit_name],
        help_text="The name on commits you make on the web. Blank: your username.",
    )
    commit_email = models.EmailField(
        max_length=254,
        blank=True,
        validators=[validate_commit_email],
        help_text="The e-mail on commits you make on the web. Blank: a no-reply address for your username.",
    )

    objects: ClassVar[HostsiteUserManager] = HostsiteUserManager()  # type: ignore[assignment]

    class Meta:
        constraints = [models.UniqueConstraint(Lower("username"), name="user_username_ci_unique")]

    def __str__(self) -> str:
        return self.username


class TokenScope(models.TextChoices):
    READ = "read", "read"
    WRITE = "write", "write"
    STATUS = "status", "status"  # may only post commit statuses


class AccessToken(models.Model):
    """A personal access token. Only its SHA-256 is stored; the secret is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=TokenScope.choices, default=TokenScope.READ)
    digest = models.CharField(max_length=64, unique=True)
    # The first characters of the secret, so a user can tell their tokens apart.
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user} {self.name} ({self.scope})"

    @property
    def allows_write(self) -> bool:
        return self.scope == TokenScope.WRITE


class Visibility(models.TextChoices):
    PUBLIC = "public", "public"
    PRIVATE = "private", "private"


class Role(models.IntegerChoices):
    """Ordered, so `role >= Role.MAINTAINER` reads as intended."""

    READER = 10, "reader"
    MAINTAINER = 20, "maintainer"
    ADMIN = 30, "admin"

    @classmethod
    def from_label(cls, label: str) -> Role:
        for role in cls:
            if role.label == label:
                return role
        raise ValueError(f"unknown role {label!r}; use reader, maintainer or admin")


class Repository(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="repositories")
    name = models.CharField(max_length=100, validators=[validate_repo_name])
    description = models.CharField(max_length=350, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    default_branch = models.CharField(max_length=255, default="main")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Maintenance replaces git's auto-gc; see repos.maintenance.
    pushes_since_maintenance = models.PositiveIntegerField(default=0)
    maintenance_claimed_at = models.DateTimeField(null=True, blank=True)
    last_maintained_at = models.DateTimeField(null=True, blank=True)
    # The last repack with a fresh delta search (repos.maintenance), and the pack's bytes per
    # object right after it: the yardstick for "the pack drifted far from fresh".
    fresh_packed_at = models.DateTimeField(null=True, blank=True)
    fresh_bytes_per_object = models.FloatField(null=True, blank=True)
    # Soft delete (issue 8): set, the repository answers 404 to everyone but staff until the
    # purge task removes it REPOSITORY_DELETE_RETENTION_DAYS later (repos.lifecycle).
    deleted_at = models.DateTimeField(null=True, blank=True, db_index=True)
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The number of its last change in the replication log (repos.changelog): a replica serves
    # it fresh only while it holds this generation.
    generation = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "repositories"
        ordering = ["owner__username", "name"]
        constraints = [
            models.UniqueConstraint("owner", Lower("name"), name="repository_owner_name_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.full_name

    def save(self, *args, **kwargs) -> None:
        # The generation belongs to repos.changelog, which moves it by `UPDATE ... + 1` in each
        # change's transaction: a full save of an instance read before a change must not write
        # the older number back.
        if not self._state.adding and self.pk is not None and kwargs.get("update_fields") is None:
            kwargs["update_fields"] = [
                f.name for f in self._meta.concrete_fields if not f.primary_key and f.name != "generation"
            ]
        super().save(*args, **kwargs)

    @property
    def full_name(self) -> str:
        return f"{self.owner.username}/{self.name}"

    @property
    def is_public(self) -> bool:
        return self.visibility == Visibility.PUBLIC

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def disk_path(self) -> Path:
        return repository_path(self.pk)


class RepositoryRedirect(models.Model):
    """An old `owner/name` of a repository that was renamed or transferred. Consulted only when
    a look-up by name misses, so a repository created under the old name takes precedence (and
    its creation removes the redirect)."""

    owner_name = models.CharField(max_length=39)
    name = models.CharField(max_length=100)
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="redirects")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("owner_name"), Lower("name"), name="repository_redirect_ci_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.owner_name}/{self.name} -> {self.repository_id}"


class Membership(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.PositiveSmallIntegerField(choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "user", name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} is {Role(self.role).label} of {self.repository}"


class Push(models.Model):
    """One accepted push: who, when, how, and (in RefUpdate) which refs moved."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="pushes")
    pusher = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="pushes"
    )
    # Kept when the account is gone, so the log still says who pushed.
    pusher_name = models.CharField(max_length=39)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    protocol = models.CharField(max_length=20, default="http")
    # True when any ref it updated is in a workspace (refs/users/...).
    touches_workspace = models.BooleanField(default=False)
    # The push options the client sent (`git push -o key=value`), as "key=value" strings,
    # bounded by the post-receive hook; reviews opens proposals from title=/description=.
    push_options = models.JSONField(default=list, blank=True)
    # The id of the spool file post-receive wrote for a git push (repos.push_spool): recording
    # it again, from the web process and from the replay task alike, finds this row instead.
    spool_id = models.CharField(max_length=64, null=True, blank=True, unique=True, editable=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"push #{self.pk} to {self.repository_id} by {self.pusher_name}"


class RefUpdate(models.Model):
    push = models.ForeignKey(Push, on_delete=models.CASCADE, related_name="ref_updates")
    ref = models.CharField(max_length=255)
    old = models.CharField(max_length=64)
    new = models.CharField(max_length=64)
    # The old tip is not an ancestor of the new one: history was rewritten (a force push, or a
    # mirrored upstream that rewrote a branch). Never silent in the pushlog.
    forced = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.ref} {self.old[:10]}..{self.new[:10]}"


class PushCommit(models.Model):
    """A commit a push introduced to the repository: each commit belongs to one push only."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    push = models.ForeignKey(Push, on_delete=models.CASCADE, related_name="commits")
    sha = models.CharField(max_length=64)
    # Order within the push: topological, oldest first (hg's pushlog lists changesets so).
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["push_id", "position"]
        constraints = [models.UniqueConstraint("repository", "sha", name="pushcommit_unique")]

    def __str__(self) -> str:
        return f"{self.sha[:12]} in push #{self.push_id}"


class Webhook(models.Model):
    """A URL that receives a signed JSON event for each push to the repository."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    # Kept, not hashed: it signs every delivery (HMAC-SHA256), so it must be readable.
    secret = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    include_workspaces = models.BooleanField(default=True, help_text="Also send pushes to workspaces.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"webhook {self.pk} of {self.repository_id} -> {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "pending"
    DELIVERED = "delivered", "delivered"
    FAILED = "failed", "failed"


class WebhookDelivery(models.Model):
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    push = models.ForeignKey(Push, on_delete=models.SET_NULL, null=True, related_name="+")
    event = models.CharField(max_length=30, default="push")
    payload = models.TextField()
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.status})"


class DailyTransfer(models.Model):
    """Bytes a repository served per day: by git itself (upload-pack responses, the origin's
    clone and fetch load) and from bundles (objects the app served, and what bundle lists
    handed to clients, for storage the app does not see such as S3/CDN). Incremented with
    F() updates, one row per repository and day."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="daily_transfers")
    day = models.DateField()
    git_bytes = models.BigIntegerField(default=0)
    git_requests = models.PositiveIntegerField(default=0)
    bundle_bytes_served = models.BigIntegerField(default=0)
    bundle_bytes_listed = models.BigIntegerField(default=0)
    bundle_list_requests = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["day"]
        constraints = [models.UniqueConstraint("repository", "day", name="daily_transfer_unique")]

    def __str__(self) -> str:
        return f"{self.repository_id} {self.day}: git {self.git_bytes}, bundles {self.bundle_bytes_served}"
