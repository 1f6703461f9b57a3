"""Proposals: a contributor's workspace ref offered for a target branch, its revisions (one per
push that moved the ref), comments and maintainers' approvals."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models import Push, Repository

TITLE_MAX = 200
DESCRIPTION_MAX = 20_000
COMMENT_MAX = 20_000


class ProposalState(models.TextChoices):
    OPEN = "open", "open"
    MERGED = "merged", "merged"
    CLOSED = "closed", "closed"


class ClosedReason(models.TextChoices):
    """Why a closed proposal is closed; empty: its author or a maintainer closed it."""

    MODERATION = "moderation", "closed by moderation"


class MergeStrategy(models.TextChoices):
    MERGE = "merge", "merge commit"
    FAST_FORWARD = "ff", "fast-forward only"
    REBASE = "rebase", "rebase"
    SQUASH = "squash", "squash"


class Proposal(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="proposals")
    number = models.PositiveIntegerField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="proposals")
    # A ref under refs/users/<author>/ (or someone's, when an admin proposed it for them).
    source_ref = models.CharField(max_length=255)
    target_branch = models.CharField(max_length=255)
    title = models.CharField(max_length=TITLE_MAX)
    description = models.TextField(max_length=DESCRIPTION_MAX, blank=True)
    state = models.CharField(max_length=10, choices=ProposalState.choices, default=ProposalState.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    merged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    merged_at = models.DateTimeField(null=True, blank=True)
    merge_push = models.ForeignKey(Push, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    merge_strategy = models.CharField(max_length=10, choices=MergeStrategy.choices, blank=True)
    merged_sha = models.CharField(max_length=64, blank=True)
    closed_reason = models.CharField(max_length=20, choices=ClosedReason.choices, blank=True)
    # Why moderation closed it. Shown to the repository's maintainers and admins and to staff
    # only: it may quote a legal notice.
    moderation_note = models.TextField(blank=True)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint("repository", "number", name="proposal_number_unique"),
        ]
        indexes = [models.Index(fields=["repository", "source_ref"], name="proposal_source_ref")]

    def __str__(self) -> str:
        return f"{self.repository_id}#{self.number} {self.title[:40]}"

    @property
    def is_open(self) -> bool:
        return self.state == ProposalState.OPEN


class ProposalRevision(models.Model):
    """Where the source ref pointed at one moment: a new one for each push that moved it."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    head_sha = models.CharField(max_length=64)
    # The merge base with the target branch when the revision was recorded.
    base_sha = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    push = models.ForeignKey(Push, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint("proposal", "number", name="revision_number_unique")]

    def __str__(self) -> str:
        return f"revision {self.number} of {self.proposal_id}: {self.head_sha[:12]}"


class Comment(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    author_name = models.CharField(max_length=39)
    body = models.TextField(max_length=COMMENT_MAX)
    revision = models.ForeignKey(
        ProposalRevision, on_delete=models.SET_NULL, null=True, blank=True, related_name="comments"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"comment {self.pk} by {self.author_name} on {self.proposal_id}"


class Approval(models.Model):
    """One per maintainer and proposal; approving again moves it to the current head. An
    approval of an older head is kept and shown as stale."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="approvals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    revision = models.ForeignKey(ProposalRevision, on_delete=models.SET_NULL, null=True, related_name="+")
    head_sha = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint("proposal", "user", name="approval_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} approved {self.proposal_id} at {self.head_sha[:12]}"
