"""The git face of the visibility component: what git is told (hideRefs) and asked (which ids a
fetch names that the viewer may not see) for one request. The same rule as the pages: the
viewer's hidden prefixes (workspaces.visibility.rule) and the objects only they reach."""

from __future__ import annotations

from repos.names import IMPORTED_REFS
from workspaces.visibility.rule import ARCHIVE, TAKEDOWN, hidden_prefixes, hidden_workspaces
from workspaces.visibility.view import view_for

# Never advertised to anyone, staff included, whatever else the viewer may see: cleanup's
# archive (restorable from the pages), the legal hold (staff read it on the pages only) and an
# import's own refs.
NEVER_SHOWN = (ARCHIVE, TAKEDOWN, IMPORTED_REFS)


def upload_hide_values(repo, user, role: str) -> list[str]:
    """uploadpack.hideRefs for a fetch by this viewer."""
    return [*NEVER_SHOWN, *(p for p in hidden_prefixes(repo, user, role) if not p.startswith(NEVER_SHOWN))]


def hidden_workspace_prefixes(repo, user, role: str) -> list[str]:
    """The workspaces (refs/users/<u>/) a push by this user may not see or touch."""
    return hidden_workspaces(hidden_prefixes(repo, user, role))


def hidden_objects(repo, user, role: str, oids: frozenset[str]) -> set[str]:
    """Which of these ids this viewer may not see (repos.fetchscreen answers for them as for
    ids that do not exist)."""
    view = view_for(repo, user, role)
    return view.hidden_objects(oids) if view.restricts else set()
