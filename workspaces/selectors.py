"""Reads for workspaces: the rules a push is judged by, and workspace listings."""

from __future__ import annotations

from django.conf import settings

from repos.models import Repository
from workspaces.models import ProtectedBranch, Workspace, WorkspaceSettings, WorkspaceState
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
        frozen=frozenset(
            Workspace.objects.filter(repository=repo, state=WorkspaceState.FROZEN).values_list(
                "user__username", flat=True
            )
        ),
        ref_limit=ws.ref_limit or settings.WORKSPACE_REF_LIMIT,
    )


def may_edit_others(role: str, repo: Repository) -> bool:
    return role == "admin" or (role == "maintainer" and workspace_settings(repo).maintainers_may_edit)
