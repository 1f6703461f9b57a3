"""The open proposal of each workspace ref, for the workspace pages' "Proposal #N" links.

Proposals belong to reviews, which sits above workspaces (docs/architecture.md): workspaces
may not import it, so settings.WORKSPACE_PROPOSAL_LINKS names the lookup (reviews'), as
settings.VISIBILITY_RULE names workspaces' rule for repos. Without one, no ref has one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from django.conf import settings
from django.utils.module_loading import import_string

from repos.models import Repository

# provider(repo, viewer, refs) -> {ref: proposal number} for the open proposals the viewer may see.
Provider = Callable[[Repository, object, list[str]], dict[str, int]]


@functools.cache
def _provider(path: str) -> Provider | None:
    return import_string(path) if path else None


def open_proposals(repo: Repository, viewer, refs: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(refs))
    provider = _provider(settings.WORKSPACE_PROPOSAL_LINKS)
    if provider is None or not wanted:
        return {}
    return provider(repo, viewer, wanted)
