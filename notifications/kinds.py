"""Every kind of notification, with its label on the preferences page and how it is delivered
to someone who never chose (docs/notifications.md). What concerns a person directly (a review
asked of them, a mention, their proposal merged, a moderator acting on their work) comes by
email at once; what only keeps them informed comes in the daily digest."""

from __future__ import annotations

from dataclasses import dataclass

from notifications.models import Delivery


@dataclass(frozen=True)
class Kind:
    name: str
    label: str
    default: str  # a Delivery value


KINDS: tuple[Kind, ...] = (
    # Proposals (reviews.events)
    Kind("proposal_opened", "A proposal is opened on a repository you maintain or watch", Delivery.DIGEST),
    Kind("review_requested", "Your review is requested", Delivery.EMAIL),
    Kind("comment", "A comment on a proposal you take part in or follow", Delivery.EMAIL),
    Kind("mention", "You are @mentioned", Delivery.EMAIL),
    Kind("approved", "A proposal you take part in is approved", Delivery.EMAIL),
    Kind("merged", "A proposal you take part in is merged", Delivery.EMAIL),
    Kind("conflict", "Your proposal no longer merges cleanly", Delivery.EMAIL),
    Kind("check_failed", "A check fails on your proposal", Delivery.EMAIL),
    # Moderation (workspaces)
    Kind("report", "A workspace is reported on a repository you administer", Delivery.EMAIL),
    Kind("report_outcome", "A report you filed is resolved or dismissed", Delivery.EMAIL),
    Kind("workspace_freeze", "Your workspace is frozen", Delivery.EMAIL),
    Kind("workspace_unfreeze", "Your workspace is unfrozen", Delivery.EMAIL),
    Kind("workspace_hide", "Your workspace is hidden", Delivery.EMAIL),
    Kind("workspace_unhide", "Your workspace is shown again", Delivery.EMAIL),
    Kind("workspace_take_down", "Your workspace is taken down", Delivery.EMAIL),
    Kind("workspace_lift_take_down", "A take-down of your workspace is lifted", Delivery.EMAIL),
    Kind("workspace_restore", "Your workspace's moderation flags are cleared", Delivery.EMAIL),
    Kind("workspace_purge", "Your workspace refs are deleted by a moderator", Delivery.EMAIL),
    Kind("repository_ban", "You are banned from a repository", Delivery.EMAIL),
    Kind("repository_unban", "A repository ban is lifted", Delivery.EMAIL),
    Kind("site_unban", "Your account is reinstated", Delivery.EMAIL),
    # Repositories and workspaces
    Kind("ref_archived", "Your workspace ref is merged and archived", Delivery.DIGEST),
    Kind("repository_deleted", "A repository holding your workspace is deleted", Delivery.EMAIL),
    Kind("mirror_failing", "A mirror you administer cannot sync", Delivery.EMAIL),
    Kind("mirror_recovered", "A mirror you administer syncs again", Delivery.DIGEST),
    # SSH keys (sshgit): credentials, so told at once, as GitHub and GitLab do
    Kind("ssh_key", "An SSH key is added to or removed from your account", Delivery.EMAIL),
    Kind(
        "deploy_key", "A deploy key is added to or removed from a repository you administer", Delivery.EMAIL
    ),
)

BY_NAME: dict[str, Kind] = {kind.name: kind for kind in KINDS}


def default_delivery(kind: str) -> str:
    """A kind not listed (a new one someone forgot to add here) stays on the site only."""
    known = BY_NAME.get(kind)
    return known.default if known is not None else Delivery.WEB
