"""The prose rows of the index (repositories, accounts, proposals), written where their source
rows are saved (search.receivers): one small upsert in the same transaction, so a new
repository or a renamed one is found at once. Moderation takes proposals out (forget_*)."""

from __future__ import annotations

from django.db.models import Q

from repos.hooks import refspace
from repos.models import Repository, User
from reviews.models import Proposal
from search.models import CommitEntry, ProposalEntry, RepositoryEntry, UserEntry
from workspaces import selectors as workspace_selectors


def sync_repository(repo: Repository) -> None:
    RepositoryEntry.objects.update_or_create(
        repository=repo,
        defaults={"owner_name": repo.owner.username, "name": repo.name, "description": repo.description},
    )


def sync_user(user: User) -> None:
    if not user.is_active:
        UserEntry.objects.filter(user=user).delete()
        return
    UserEntry.objects.update_or_create(
        user=user, defaults={"username": user.username, "display_name": user.display_name}
    )
    # Repository names are shown as owner/name: an owner's rename renames them.
    RepositoryEntry.objects.filter(repository__owner=user).exclude(owner_name=user.username).update(
        owner_name=user.username
    )


def sync_proposal(proposal: Proposal, *, taken_down: frozenset[str] | None = None) -> None:
    """Index the proposal unless it comes from a taken-down workspace (`taken_down`: the
    repository's taken-down usernames, when the caller knows them)."""
    if taken_down is None:
        taken_down = frozenset(workspace_selectors.taken_down_usernames(proposal.repository))
    if _from(proposal, taken_down):
        ProposalEntry.objects.filter(proposal=proposal).delete()
        return
    ProposalEntry.objects.update_or_create(
        proposal=proposal,
        defaults={
            "repository_id": proposal.repository_id,
            "number": proposal.number,
            "title": proposal.title,
            "description": proposal.description,
            "author_name": proposal.author.username,
        },
    )


def _from(proposal: Proposal, usernames: frozenset[str]) -> bool:
    return proposal.author.username in usernames or any(
        proposal.source_ref.startswith(refspace.workspace_prefix(name)) for name in usernames
    )


def forget_proposals_of(*, repo_id: int, username: str) -> int:
    """Take the proposals a workspace offered (authored there, or proposed from it) out."""
    rows = ProposalEntry.objects.filter(repository_id=repo_id).filter(
        Q(author_name=username) | Q(proposal__source_ref__startswith=refspace.workspace_prefix(username))
    )
    return rows.delete()[0]


def resync_proposals(*, repo: Repository, taken_down: frozenset[str]) -> None:
    for proposal in Proposal.objects.filter(repository=repo).select_related("author"):
        sync_proposal(proposal, taken_down=taken_down)


def forget_commits(*, repo_id: int, shas: set[str]) -> int:
    """Delete the given commits' rows (commits moderation made unreadable)."""
    deleted = 0
    ordered = sorted(shas)
    for start in range(0, len(ordered), 500):
        part = ordered[start : start + 500]
        deleted += CommitEntry.objects.filter(repository_id=repo_id, sha__in=part).delete()[0]
    return deleted
