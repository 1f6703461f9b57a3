"""The open proposal of each workspace ref, for the workspace pages' "Proposal #N" links.

Proposals belong to reviews, which sits above workspaces (docs/architecture.md): workspaces
may not import it, so reviews registers the lookup here when it loads (reviews.apps), as
workspaces registers the visibility rule with repos. Without reviews, no ref has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from repos.models import Repository

# provider(repo, viewer, refs) -> {ref: proposal number} for the open proposals the viewer may see.
Provider = Callable[[Repository, object, list[str]], dict[str, int]]
_provider: Provider | None = None


def register(provider: Provider) -> None:
    global _provider
    _provider = provider


def open_proposals(repo: Repository, viewer, refs: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(refs))
    if _provider is None or not wanted:
        return {}
    return _provider(repo, viewer, wanted)
