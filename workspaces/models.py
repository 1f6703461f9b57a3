"""Workspaces: per-repository settings, protected branches, and each user's workspace flags."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.hooks import refspace
from repos.models import Repository


class WorkspaceSettings(models.Model):
    repository = models.OneToOneField(Repository, on_delete=models.CASCADE, related_name="workspace_settings")
    maintainers_may_edit = models.BooleanField(
        default=True, help_text="Maintainers may push to other users' workspaces (admins always may)."
    )
    ref_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Refs per user; empty: site default"
    )
    branch_pushes_to_workspace = models.BooleanField(
        default=True,
        help_text="Branch pushes by contributors go to their workspace: `git push origin my-fix` by "
        f"someone without write access lands in {refspace.WORKSPACES}<them>/my-fix.",
    )
    delete_merged_refs = models.BooleanField(
        default=True,
        help_text="Delete workspace refs once their work is on a branch (restorable for a while).",
    )
    protected_tags = models.TextField(
        blank=True,
        default="",
        help_text="Tag name patterns (v*, release-?), one per line: matching tags are never moved, "
        "and only admins delete them.",
    )

    def __str__(self) -> str:
        return f"workspace settings of {self.repository}"

    def tag_patterns(self) -> tuple[str, ...]:
        return tuple(line.strip() for line in self.protected_tags.splitlines() if line.strip())


class ProtectedBranch(models.Model):
    """Cannot be deleted or moved by non-fast-forward, unless an admin allows force."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="protected_branches")
    name = models.CharField(max_length=255)
    allow_force = models.BooleanField(default=False)
    # Merge rules for proposals targeting this branch (reviews asks them before merging).
    required_approvals = models.PositiveSmallIntegerField(default=0)
    require_code_owners = models.BooleanField(default=False)
    required_checks = models.JSONField(default=list, blank=True)  # status contexts that must pass
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "name", name="protected_branch_unique")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.repository}:{self.name}"


# The moderation flags, in the order pages and audit rows show them.
FLAGS = ("frozen", "hidden", "taken_down")


class Workspace(models.Model):
    """One user's workspace on one repository (refs/users/<username>/*). The refs live in git;
    this row holds what git cannot: moderation flags and push statistics.

    The flags are independent: a frozen workspace that is then hidden stays frozen, and
    lifting one flag leaves the others as they were."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="workspaces")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspaces")
    frozen = models.BooleanField(default=False, help_text="The owner may not push or add to it from the web.")
    hidden = models.BooleanField(
        default=False, help_text="Shown only to its owner, repository admins and staff."
    )
    taken_down = models.BooleanField(
        default=False, help_text="Refs moved out of reach; accepts nothing (legal hold)."
    )
    # A repository ban froze it: the unban lifts that freeze, and only that one.
    frozen_by_ban = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_push_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "user", name="workspace_unique")]

    def __str__(self) -> str:
        return f"{self.user} on {self.repository} ({self.state})"

    @property
    def prefix(self) -> str:
        return refspace.workspace_prefix(self.user.username)

    @property
    def flags(self) -> dict[str, bool]:
        """What audit rows record: every flag, set or not."""
        return {name: bool(getattr(self, name)) for name in FLAGS}

    @property
    def flag_labels(self) -> list[str]:
        """The flags that are set, as pages show them ("frozen", "hidden", "taken down")."""
        return [name.replace("_", " ") for name in FLAGS if getattr(self, name)]

    @property
    def refuses_writes(self) -> bool:
        # A take-down refuses pushes too: the workspace is under legal hold.
        return self.frozen or self.taken_down

    @property
    def state(self) -> str:
        """The most restrictive flag, or "active": read-only, for callers that show one word."""
        for name in reversed(FLAGS):
            if getattr(self, name):
                return name
        return "active"


class PatchId(models.Model):
    """What a workspace push brought, by content: the patch-id (`git patch-id --stable`) of each
    commit it introduced, and of each updated ref's combined diff against its merge base with
    the default branch. Cleanup looks up the patch-ids of what lands on a branch here, to find
    refs whose work landed by rebase or squash without walking every workspace ref."""

    class Kind(models.TextChoices):
        COMMIT = "commit"
        COMBINED = "combined"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    patch_id = models.CharField(max_length=64)
    sha = models.CharField(max_length=64)  # the commit, or the ref's tip for a combined diff
    push = models.ForeignKey("repos.Push", on_delete=models.CASCADE, related_name="+")  # the workspace push

    class Meta:
        indexes = [models.Index(fields=["repository", "patch_id"], name="patchid_lookup")]
        constraints = [models.UniqueConstraint("repository", "kind", "sha", name="patchid_unique")]

    def __str__(self) -> str:
        return f"{self.kind} {self.sha[:12]}: {self.patch_id[:12]}"


class ArchivedRef(models.Model):
    """A workspace ref the platform deleted because its work landed on a branch. The commit stays
    reachable under `archive_ref` (refs/archive/..., never advertised) until `expires_at`; the
    owner can restore it until then."""

    class State(models.TextChoices):
        ARCHIVED = "archived"
        RESTORED = "restored"
        EXPIRED = "expired"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="archived_refs")
    username = models.CharField(max_length=150)  # the workspace's owner
    ref = models.CharField(max_length=255)
    sha = models.CharField(max_length=64)
    archive_ref = models.CharField(max_length=300, unique=True)
    branch = models.CharField(max_length=255)
    how = models.CharField(max_length=20)  # merged / rebased / squashed
    reason = models.CharField(max_length=300)
    push = models.ForeignKey("repos.Push", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    deleted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.ARCHIVED)
    restored_at = models.DateTimeField(null=True, blank=True)
    restored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["state", "expires_at"], name="archivedref_expiry")]

    def __str__(self) -> str:
        return f"{self.ref} ({self.reason})"


class RefRename(models.Model):
    """A workspace ref the platform renamed (workspaces.refmigration: nameless heads moved to the
    one-component layout of repos.hooks.refspace). Pages that name `old_ref` redirect to
    `new_ref`, and a re-run of the migration finds the name it chose before."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    old_ref = models.CharField(max_length=255)
    new_ref = models.CharField(max_length=255)
    sha = models.CharField(max_length=64)  # the tip it had: the rename is a compare-and-swap on it
    created_at = models.DateTimeField(auto_now_add=True)
    applied_at = models.DateTimeField(null=True, blank=True)  # when git moved the ref

    class Meta:
        constraints = [models.UniqueConstraint("repository", "old_ref", name="refrename_once")]

    def __str__(self) -> str:
        return f"{self.old_ref} -> {self.new_ref}"


# --- moderation (workspaces.moderation) -------------------------------------------------------------


class ModerationAction(models.TextChoices):
    FREEZE = "freeze"
    UNFREEZE = "unfreeze"
    HIDE = "hide"
    UNHIDE = "unhide"
    TAKE_DOWN = "take_down"
    LIFT_TAKE_DOWN = "lift_take_down"
    PURGE = "purge"
    RESTORE = "restore"  # clears every flag
    BAN = "ban"
    UNBAN = "unban"
    SITE_BAN = "site_ban"
    SITE_UNBAN = "site_unban"
    DISMISS_REPORT = "dismiss_report"
    BLOCK_CONTENT = "block_content"
    UNBLOCK_CONTENT = "unblock_content"


class BlockedObject(models.Model):
    """A tree or blob that no push or web write may publish in the repository, whatever
    history carries it: staff's list for legal requests (a DMCA notice names files, and a file
    is a blob). A take-down already blocks its own commits; this blocks content by its bytes,
    so it is explicit, audited and staff-only (workspaces.moderation_content)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="blocked_objects")
    oid = models.CharField(max_length=64)
    object_type = models.CharField(max_length=4)  # "blob" or "tree"
    reason = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint("repository", "oid", name="blocked_object_unique")]

    def __str__(self) -> str:
        return f"{self.object_type} {self.oid} blocked in {self.repository_id}"


class RepositoryBan(models.Model):
    """The user may not push to the repository at all (the pre-receive policy refuses)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="bans")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint("repository", "user", name="repository_ban_unique")]

    def __str__(self) -> str:
        return f"{self.user} banned from {self.repository}"


class Report(models.Model):
    """Someone reported a workspace; staff and the repository's admins work the queue."""

    class State(models.TextChoices):
        OPEN = "open"
        RESOLVED = "resolved"  # an action was taken
        DISMISSED = "dismissed"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="reports")
    target_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["state", "created_at"], name="report_queue")]

    def __str__(self) -> str:
        return f"report on {self.target_user} in {self.repository} ({self.state})"


class WorkspaceExport(models.Model):
    """A contributor's download of their workspace (`refs/users/<username>/*`, full history) as
    a git bundle, offered while their repository is deleted but not yet purged (issue 8).
    Built by Celery (workspaces.exports); the file lives under VAR_DIR/exports and is served
    to that user only."""

    class State(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        FAILED = "failed"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="workspace_exports")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="workspace_exports"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    # Relative to VAR_DIR/exports; empty until the bundle is ready.
    path = models.CharField(max_length=200, blank=True)
    size = models.BigIntegerField(default=0)
    ref_count = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"workspace export of {self.user} in {self.repository_id} ({self.state})"
