"""Reads about where a repository's history comes from, for its page: an import in progress,
the mirror it tracks, and (for admins) the legacy objects its history carries."""

from __future__ import annotations

from repos import objectcheck_services, selectors
from repos.models import ImportState, Mirror, Repository, RepositoryImport


def active_import(repo: Repository) -> RepositoryImport | None:
    return (
        RepositoryImport.objects.filter(repository=repo, state__in=(ImportState.QUEUED, ImportState.RUNNING))
        .order_by("-id")
        .first()
    )


def mirror_of(repo: Repository) -> Mirror | None:
    return Mirror.objects.filter(repository=repo).first()


def repository_page_context(user, repo: Repository) -> dict:
    is_admin = selectors.can_admin(user, repo)
    return {
        "active_import": active_import(repo),
        "mirror": mirror_of(repo),
        "legacy": objectcheck_services.legacy_summary(repo) if is_admin else None,
    }
