"""Reads for workspaces: the rules a push is judged by, and workspace listings."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Q

from repos.hooks.pushpolicy import Rules
from repos.models import Mirror, Repository, Role
from repos.selectors import role_for
from repos.visibility import view_for
from workspaces.browse import workspace_summary
from workspaces.models import FLAGS, ProtectedBranch, RepositoryBan, Workspace, WorkspaceSettings

# A take-down refuses pushes (legal hold) and hides the workspace whatever the other flags say.
NO_PUSH = Q(frozen=True) | Q(taken_down=True)
INVISIBLE = Q(hidden=True) | Q(taken_down=True)
MODERATED = Q(frozen=True) | Q(hidden=True) | Q(taken_down=True)


def workspace_settings(repo: Repository) -> WorkspaceSettings:
    found = WorkspaceSettings.objects.filter(repository=repo).first()
    return found or WorkspaceSettings(repository=repo)


def rules_for(repo: Repository) -> Rules:
    """The rules a push to this repository is judged by (settings.PUSH_RULES)."""
    ws = workspace_settings(repo)
    closed = list(
        Workspace.objects.filter(NO_PUSH, repository=repo).values_list("user__username", "taken_down")
    )
    return Rules(
        default_branch=repo.default_branch,
        protected=dict(ProtectedBranch.objects.filter(repository=repo).values_list("name", "allow_force")),
        protected_tags=ws.tag_patterns(),
        maintainers_edit_workspaces=ws.maintainers_may_edit,
        # A taken-down workspace accepts nothing from its owner either (it is under legal hold),
        # and nothing from anyone else (taken_down).
        frozen=frozenset(name for name, _down in closed),
        taken_down=frozenset(name for name, down in closed if down),
        ref_limit=ws.ref_limit or settings.WORKSPACE_REF_LIMIT,
        banned=frozenset(
            RepositoryBan.objects.filter(repository=repo).values_list("user__username", flat=True)
        ),
        mirror=Mirror.objects.filter(repository=repo, enabled=True).exists(),
        map_branches=ws.branch_pushes_to_workspace,
    )


def _usernames(repo: Repository, condition: Q) -> list[str]:
    return sorted(
        Workspace.objects.filter(condition, repository=repo).values_list("user__username", flat=True)
    )


def may_edit_others(role: str, repo: Repository) -> bool:
    return role == "admin" or (role == "maintainer" and workspace_settings(repo).maintainers_may_edit)


def can_see_hidden(viewer, repo: Repository, username: str) -> bool:
    """Hidden and taken-down workspaces show to their owner, staff and repository admins."""
    if viewer is not None and viewer.is_authenticated and (viewer.username == username or viewer.is_staff):
        return True
    return role_for(viewer, repo) == Role.ADMIN


def workspace_flags(repo: Repository, username: str) -> dict[str, bool]:
    """{"frozen": ..., "hidden": ..., "taken_down": ...}; all False without a row."""
    row = Workspace.objects.filter(repository=repo, user__username=username).values(*FLAGS).first()
    return {name: bool(row and row[name]) for name in FLAGS}


def state_of(flags: dict[str, bool]) -> str:
    """The most restrictive flag set, or "active" (see Workspace.state)."""
    return next((name for name in reversed(FLAGS) if flags[name]), "active")


def workspace_state(repo: Repository, username: str) -> str:
    return state_of(workspace_flags(repo, username))


def write_refusal(repo: Repository, username: str, *, actor, what: str) -> str | None:
    """Why `actor` may not add to `username`'s workspace from the web (restore a ref, open or
    update a proposal), or None. The rule a push meets in the policy, for writes that do not
    go through git's hooks: a take-down refuses everyone, a freeze refuses the owner, and a
    deactivated account can do nothing."""
    if actor is not None and actor.is_authenticated and not actor.is_active:
        return "This account is deactivated."
    flags = workspace_flags(repo, username)
    if flags["taken_down"]:
        return f"{username}'s workspace on {repo.full_name} was taken down by a moderator: {what} is refused."
    if flags["frozen"] and actor is not None and actor.username == username:
        return f"Your workspace on {repo.full_name} is frozen by a moderator: {what} is refused."
    return None


def may_restore(viewer, repo: Repository, username: str) -> bool:
    """Who may restore a workspace's archived refs: its owner, and repository admins."""
    if viewer is None or not viewer.is_authenticated:
        return False
    return viewer.username == username or role_for(viewer, repo) == Role.ADMIN


def visible_to(viewer, repo: Repository, username: str) -> bool:
    flags = workspace_flags(repo, username)
    return not (flags["hidden"] or flags["taken_down"]) or can_see_hidden(viewer, repo, username)


def content_visible(viewer, repo: Repository, username: str) -> bool:
    """Whether the viewer may see what the workspace holds (its refs, archived refs and object
    ids), not only its flags: a taken-down workspace's page tells its owner and the repository's
    admins that it was taken down, and shows them nothing of it (repos.visibility decides)."""
    return view_for(repo, viewer).username_visible(username)


def invisible_usernames(repo: Repository) -> list[str]:
    """Owners of the repository's hidden or taken-down workspaces."""
    return _usernames(repo, INVISIBLE)


def hidden_usernames(repo: Repository) -> list[str]:
    """Owners of the repository's hidden workspaces (taken down or not)."""
    return _usernames(repo, Q(hidden=True))


def taken_down_usernames(repo: Repository) -> list[str]:
    """Owners of the repository's taken-down workspaces."""
    return _usernames(repo, Q(taken_down=True))


def visible_workspaces(viewer, repo: Repository) -> list[dict]:
    """Users with workspace refs the viewer may see: refs, latest commit, last push, the
    moderation flags (and `state`, the most restrictive of them); most recently active first."""
    rows = {w.user.username: w for w in Workspace.objects.filter(repository=repo).select_related("user")}
    entries = []
    for username, info in workspace_summary(repo).items():
        row = rows.get(username)
        flags = row.flags if row else dict.fromkeys(FLAGS, False)
        if (flags["hidden"] or flags["taken_down"]) and not can_see_hidden(viewer, repo, username):
            continue
        entries.append(
            {
                "username": username,
                "refs": info["refs"],
                "last_commit": info["last_commit"],
                "last_push": row.last_push_at if row else None,
                "state": row.state if row else "active",
                "flag_labels": row.flag_labels if row else [],
                **flags,
            }
        )
    return sorted(entries, key=lambda e: e["last_commit"], reverse=True)
