"""Reads for workspaces: the rules a push is judged by, and workspace listings."""

from __future__ import annotations

from django.conf import settings

from repos.models import Mirror, Repository, Role
from repos.selectors import role_for
from workspaces.models import ProtectedBranch, RepositoryBan, Workspace, WorkspaceSettings, WorkspaceState
from workspaces.policy import Rules


def workspace_settings(repo: Repository) -> WorkspaceSettings:
    found = WorkspaceSettings.objects.filter(repository=repo).first()
    return found or WorkspaceSettings(repository=repo)


def rules_for(repo: Repository) -> Rules:
    ws = workspace_settings(repo)
    return Rules(
        default_branch=repo.default_branch,
        protected=dict(ProtectedBranch.objects.filter(repository=repo).values_list("name", "allow_force")),
        maintainers_edit_workspaces=ws.maintainers_may_edit,
        # A taken-down workspace accepts nothing either: it is under legal hold.
        frozen=frozenset(
            Workspace.objects.filter(repository=repo, state__in=NO_PUSH).values_list(
                "user__username", flat=True
            )
        ),
        ref_limit=ws.ref_limit or settings.WORKSPACE_REF_LIMIT,
        banned=frozenset(RepositoryBan.objects.filter(repository=repo).values_list("user__username", flat=True)),
        mirror=Mirror.objects.filter(repository=repo, enabled=True).exists(),
    )


NO_PUSH = (WorkspaceState.FROZEN, WorkspaceState.TAKEN_DOWN)


def may_edit_others(role: str, repo: Repository) -> bool:
    return role == "admin" or (role == "maintainer" and workspace_settings(repo).maintainers_may_edit)


INVISIBLE = (WorkspaceState.HIDDEN, WorkspaceState.TAKEN_DOWN)


def can_see_hidden(viewer, repo: Repository, username: str) -> bool:
    """Hidden and taken-down workspaces show to their owner, staff and repository admins."""
    if viewer is not None and viewer.is_authenticated and (viewer.username == username or viewer.is_staff):
        return True
    return role_for(viewer, repo) == Role.ADMIN


def workspace_state(repo: Repository, username: str) -> str:
    row = Workspace.objects.filter(repository=repo, user__username=username).values_list("state", flat=True).first()
    return row or WorkspaceState.ACTIVE


def may_restore(viewer, repo: Repository, username: str) -> bool:
    """Who may restore a workspace's archived refs: its owner, and repository admins."""
    if viewer is None or not viewer.is_authenticated:
        return False
    return viewer.username == username or role_for(viewer, repo) == Role.ADMIN


def visible_to(viewer, repo: Repository, username: str) -> bool:
    return workspace_state(repo, username) not in INVISIBLE or can_see_hidden(viewer, repo, username)


def invisible_usernames(repo: Repository) -> list[str]:
    """Owners of the repository's hidden and taken-down workspaces."""
    return sorted(Workspace.objects.filter(repository=repo, state__in=INVISIBLE).values_list(
        "user__username", flat=True))


def visible_workspaces(viewer, repo: Repository) -> list[dict]:
    """Users with workspace refs the viewer may see: refs, latest commit, last push, state;
    most recently active first."""
    from workspaces.browse import workspace_summary

    rows = {w.user.username: w for w in Workspace.objects.filter(repository=repo).select_related("user")}
    entries = []
    for username, info in workspace_summary(repo).items():
        row = rows.get(username)
        state = row.state if row else WorkspaceState.ACTIVE
        if state in INVISIBLE and not can_see_hidden(viewer, repo, username):
            continue
        entries.append({"username": username, "refs": info["refs"], "last_commit": info["last_commit"],
                        "last_push": row.last_push_at if row else None, "state": state})
    return sorted(entries, key=lambda e: e["last_commit"], reverse=True)
