"""Who may see what of a repository with moderated workspaces, from the database alone.

| viewer                 | taken-down workspace | hidden workspace |
|------------------------|----------------------|------------------|
| staff                  | sees everything      | sees everything  |
| repository admin       | hidden               | sees it          |
| the workspace's owner  | hidden (legal hold)  | sees it          |
| everyone else          | hidden               | hidden           |

A viewer's hidden refs are the prefixes below: every other exit (git's hideRefs, the closure of
hidden objects, the pages) is derived from them. What may not be published again is narrower
and the same for every viewer but staff: the commits only taken-down refs reach, and the
content staff blocked (workspaces.visibility.republish).
"""

from __future__ import annotations

from repos.hooks import refspace
from repos.models import Role
from repos.selectors import role_for
from workspaces import selectors

# Where a take-down moves a workspace's refs (workspaces.moderation).
TAKEDOWN = refspace.TAKEDOWN
# Where cleanup keeps deleted workspace refs (workspaces.cleanup); restorable, never advertised.
ARCHIVE = refspace.ARCHIVE


def is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def workspace_prefixes(username: str) -> tuple[str, str]:
    """A user's workspace refs and the archive of them, both hidden with the workspace."""
    return (refspace.workspace_prefix(username), f"{ARCHIVE}{username}/")


def takedown_prefixes(taken_down: list[str]) -> tuple[str, ...]:
    """Every ref a take-down of these users keeps: the legal hold and what is left of the
    workspaces (an archive, refs pushed back after a lift and a second take-down)."""
    if not taken_down:
        return ()
    return tuple(sorted({TAKEDOWN, *(p for name in taken_down for p in workspace_prefixes(name))}))


def hidden_prefixes(repo, user, role: str | None = None) -> tuple[str, ...]:
    """The ref prefixes whose content this viewer may not see; () for a view of everything.
    `role` is the viewer's role label when the caller knows it already (a git request does)."""
    if is_staff(user):
        return ()
    taken_down = selectors.taken_down_usernames(repo)
    hidden = selectors.hidden_usernames(repo)
    if not taken_down and not hidden:
        return ()
    own = user.username if user is not None and user.is_authenticated else None
    if hidden and (role == "admin" if role is not None else role_for(user, repo) == Role.ADMIN):
        hidden = []
    prefixes = set(takedown_prefixes(taken_down))
    for name in hidden:
        if name != own:
            prefixes.update(workspace_prefixes(name))
    return tuple(sorted(prefixes))


def blocked_prefixes(repo, user) -> tuple[str, ...]:
    """The refs whose commits this user may not publish again: every taken-down workspace's,
    for everyone but staff (its owner included: a take-down is a legal hold). Hiding a
    workspace blocks nobody."""
    if is_staff(user):
        return ()
    return takedown_prefixes(selectors.taken_down_usernames(repo))


def hidden_workspaces(prefixes: tuple[str, ...]) -> list[str]:
    """The `refs/users/<u>/` prefixes among a viewer's hidden prefixes."""
    return [prefix for prefix in prefixes if prefix.startswith(refspace.WORKSPACES)]
