"""The search index: rows copied from git and from other apps' tables, kept by search's own
receivers and tasks. The engines' structures (trigram and full-text indexes, FTS5 tables) are
built over these tables by the migrations, per database vendor (search/engines/).

Rows of private repositories stay in the index: every query filters by the repositories the
viewer may read, so a visibility change needs no reindex (search/backend.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from repos.models import Repository


class IndexState(models.Model):
    """How far one repository is indexed: the default branch's commit whose files are in
    CodeFile, and the commits (`commit_tips`) whose history is in CommitEntry."""

    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, related_name="+", primary_key=True
    )
    code_branch = models.CharField(max_length=255, blank=True)
    code_commit = models.CharField(max_length=64, blank=True)
    # Every commit reachable from these is indexed (rev-list's --not list for the next run).
    commit_tips = models.JSONField(default=list)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"repository {self.repository_id} at {self.code_commit[:12] or '-'}"


class CodeFile(models.Model):
    """One text file of a repository's default branch, as of IndexState.code_commit."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    # sha1 of the path's bytes: the key (paths may be longer than a btree entry allows).
    path_hash = models.CharField(max_length=40)
    # For display and search: not-UTF-8 bytes shown as U+FFFD.
    path = models.TextField()
    # The path's bytes percent-encoded, as blob URLs take it (repos.views.browse.url_for).
    path_url = models.TextField()
    blob = models.CharField(max_length=64)
    size = models.PositiveIntegerField()
    content = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint("repository", "path_hash", name="search_code_path_unique")]

    def __str__(self) -> str:
        return self.path


class CommitEntry(models.Model):
    """One commit reachable from a repository's branches (refs/heads/*)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    sha = models.CharField(max_length=64)
    message = models.TextField()
    author_name = models.CharField(max_length=255)
    author_email = models.CharField(max_length=255)
    committed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint("repository", "sha", name="search_commit_unique")]
        indexes = [
            models.Index(fields=["sha"], name="search_commit_sha"),
            models.Index(fields=["repository", "-committed_at"], name="search_commit_date"),
        ]

    def __str__(self) -> str:
        return self.sha


class RepositoryEntry(models.Model):
    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, related_name="+", primary_key=True
    )
    owner_name = models.CharField(max_length=39)
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=350, blank=True)

    def __str__(self) -> str:
        return f"{self.owner_name}/{self.name}"


class ProposalEntry(models.Model):
    proposal = models.OneToOneField(
        "reviews.Proposal", on_delete=models.CASCADE, related_name="+", primary_key=True
    )
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField()
    title = models.TextField()
    description = models.TextField(blank=True)
    author_name = models.CharField(max_length=39)

    def __str__(self) -> str:
        return f"#{self.number} {self.title}"


class UserEntry(models.Model):
    """Active accounts only."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", primary_key=True
    )
    username = models.CharField(max_length=39)
    display_name = models.CharField(max_length=100, blank=True)

    def __str__(self) -> str:
        return self.username
