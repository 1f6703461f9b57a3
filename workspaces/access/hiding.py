"""Which refs a git request may see and reach: per-request hideRefs for fetches and pushes,
and the protocol v2 wants no hideRefs stops."""

from __future__ import annotations

from repos.names import IMPORTED_REFS
from repos.visibility import normalize_oid
from workspaces import selectors, visibility

# Where cleanup keeps deleted workspace refs (workspaces.cleanup): never advertised, never
# pushable. Protocol v0 refuses wants no advertised ref reaches; git 2.39's v2 serves any object
# asked for by id, so archived (landed) work stays fetchable by someone who knows its id.
ARCHIVE = "refs/archive/"
# Where a take-down moves a workspace's refs (workspaces.moderation): hidden from everyone,
# staff included, in git; staff read the content through the web pages only.
TAKEDOWN = "refs/takedown/"


def _sees_hidden(user, role: str) -> bool:
    return role == "admin" or bool(user is not None and user.is_active and user.is_staff)


def _hidden_workspaces(repo, user, role: str) -> list[str]:
    """refs/users/<u>/ of the hidden and taken-down workspaces this user may not see."""
    if _sees_hidden(user, role):
        return []
    own = user.username if user is not None else None
    return [f"refs/users/{name}/" for name in selectors.invisible_usernames(repo) if name != own]


def git_config(repo, user, role: str, *, service: str, advertise: bool) -> list[tuple[str, str]]:
    if service == "upload-pack":
        return [
            ("uploadpack.hideRefs", value)
            for value in (ARCHIVE, TAKEDOWN, IMPORTED_REFS, *_hidden_workspaces(repo, user, role))
        ]
    if service != "receive-pack" or user is None:
        return []
    pairs = [
        # refs/for/* is handled by the proc-receive hook (nameless push).
        ("receive.procReceiveRefs", "refs/for/"),
        # While a push sits in quarantine, the repository is its "alternate", and the
        # connectivity check lists every alternate ref, hideRefs or not: 100k workspace refs
        # cost each push ~200 ms (bench/workspaces.py). Canonical refs and the pusher's own
        # workspace are the tips a push builds on; with fewer tips git walks a little further
        # at worst, and checks exactly as strictly.
        ("core.alternateRefsPrefixes", f"refs/heads/ refs/tags/ refs/users/{user.username}/"),
    ]
    if not selectors.may_edit_others(role, repo):
        # A push advertises the canonical refs and the pusher's own workspace only: with
        # 100k workspace refs the advertisement is 7.3 MB, hidden it is under 1 KB. Those who
        # may edit others' workspaces see them all, because git sends an update of a hidden
        # ref as a creation, which fails.
        own = f"refs/users/{user.username}/"
        if advertise:
            # The same refs, said as "hide everything but these": repos.advertisement then
            # lists them by prefix instead of receive-pack reading all 100k (~13 ms a push).
            # Other namespaces (refs/archive/; none is pushable by a contributor) are hidden too.
            pairs += [
                ("receive.hideRefs", value) for value in ("refs/", "!refs/heads/", "!refs/tags/", f"!{own}")
            ]
        else:
            # The push itself: git refuses updates to other users' workspaces as hidden refs,
            # and the pre-receive policy explains every other refusal.
            pairs += [
                ("receive.hideRefs", "refs/users/"),
                ("receive.hideRefs", f"!{own}"),
                ("receive.hideRefs", ARCHIVE),
                ("receive.hideRefs", TAKEDOWN),
                ("receive.hideRefs", IMPORTED_REFS),
            ]
    else:
        # Maintainers see every workspace but hidden and taken-down ones (admins see those).
        pairs += [
            ("receive.hideRefs", value)
            for value in (ARCHIVE, TAKEDOWN, IMPORTED_REFS, *_hidden_workspaces(repo, user, role))
        ]
    return pairs


def refused_wants(repo, user, role: str, read_wants) -> str | None:
    """Protocol v2 serves any object asked for by id (`want`, and `oid` in object-info),
    whatever hideRefs says: ids are normalised (git takes upper-case hex) and checked against
    what this viewer may see. Repositories with nothing moderated never parse the request."""
    view = visibility.view_for(repo, user)
    if not view.restricts:
        return None
    oids = {normalize_oid(want) for want in read_wants()}
    if None in oids or view.hidden_objects(oid for oid in oids if oid):
        return "git upload-pack: not our ref (the object is not available)"
    return None
