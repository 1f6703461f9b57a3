"""Proposals under moderation: a workspace's take-down closes its open proposals, inside the
take-down's transaction (workspaces.moderation sends the signal; reviews depends on workspaces,
never the other way)."""

from __future__ import annotations

from django.dispatch import receiver

from reviews import services
from workspaces.moderation import workspace_taken_down


@receiver(workspace_taken_down)
def close_proposals(sender, workspace, acting_user, reason: str, **_kwargs) -> list[int]:
    """No try/except: a failure here must roll the take-down back with it."""
    by = acting_user.username if acting_user is not None else "a moderator"
    note = f"Closed by moderation: {workspace.user.username}'s workspace was taken down by {by}. Reason: {reason}"
    return services.proposals_close_for_moderation(
        repo=workspace.repository, username=workspace.user.username, note=note
    )
