"""Reads about where a repository's history comes from: the mirror it tracks. (The import in
progress is repos.selectors.active_import: pushes and web edits are refused while it runs.)"""

from __future__ import annotations

from repos.models import Mirror, Repository


def mirror_of(repo: Repository) -> Mirror | None:
    return Mirror.objects.filter(repository=repo).first()
