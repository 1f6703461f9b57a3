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
    # Merge by itself, with this strategy, once the branch's merge rules are met; empty: off.
    auto_merge_strategy = models.CharField(max_length=10, choices=MergeStrategy.choices, blank=True)
    auto_merge_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
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


class Side(models.TextChoices):
    OLD = "old", "old"  # the revision's base: a removed or context line, numbered as before
    NEW = "new", "new"  # the revision's head: an added or context line, numbered as after


class Thread(models.Model):
    """A discussion anchored to lines of one revision's diff: (revision, path, side, lines).
    Later revisions show it where those lines went, or as outdated with `context`."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="threads")
    revision = models.ForeignKey(ProposalRevision, on_delete=models.CASCADE, related_name="threads")
    path = models.TextField()
    side = models.CharField(max_length=3, choices=Side.choices, default=Side.NEW)
    line_start = models.PositiveIntegerField()
    line_end = models.PositiveIntegerField()
    # The anchored lines and a few around them as [[number, text], ...], from the revision it
    # was written on: what an outdated thread shows.
    context = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["proposal", "revision"], name="thread_proposal_revision")]

    def __str__(self) -> str:
        return f"thread {self.pk} on {self.path}:{self.line_start}-{self.line_end} ({self.side})"

    @property
    def resolved(self) -> bool:
        return self.resolved_at is not None


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
    # A line comment (the first of its thread, or a reply); None: on the whole proposal.
    thread = models.ForeignKey(
        Thread, on_delete=models.CASCADE, null=True, blank=True, related_name="comments"
    )
    # The commit that applied this comment's suggestion block, once applied.
    suggestion_applied_sha = models.CharField(max_length=64, blank=True)

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


class ReviewRequest(models.Model):
    """Someone asked to review a proposal: by hand, or as a code owner of files it changes."""

    class Reason(models.TextChoices):
        MANUAL = "manual", "requested"
        CODEOWNERS = "codeowners", "code owner"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="review_requests")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    reason = models.CharField(max_length=12, choices=Reason.choices, default=Reason.MANUAL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint("proposal", "user", name="review_request_unique")]

    def __str__(self) -> str:
        return f"review of {self.proposal_id} requested from {self.user_id}"


class MergeCheck(models.Model):
    """Whether git can merge the proposal, computed by a Celery task for one (target tip,
    proposal tip) pair; a page showing another pair treats it as not known yet. The rules
    (approvals, checks) are not cached here: they are read when asked."""

    class State(models.TextChoices):
        CLEAN = "clean", "merges cleanly"
        CONFLICTS = "conflicts", "conflicts"
        ERROR = "error", "could not be checked"

    proposal = models.OneToOneField(Proposal, on_delete=models.CASCADE, related_name="merge_check")
    target_sha = models.CharField(max_length=64)
    head_sha = models.CharField(max_length=64)
    state = models.CharField(max_length=10, choices=State.choices)
    conflicts = models.JSONField(default=list, blank=True)  # paths, when state is conflicts
    behind = models.PositiveIntegerField(default=0)  # target commits the proposal lacks
    detail = models.CharField(max_length=500, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.proposal_id}: {self.state} at {self.target_sha[:12]}/{self.head_sha[:12]}"
