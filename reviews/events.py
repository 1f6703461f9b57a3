"""What happened to a proposal, told to the people it concerns (notifications). Every writer in
reviews calls one of these after its change; each only records notifications (and queues mail)
once the caller's transaction commits, and never raises into the caller."""

from __future__ import annotations


def proposal_opened(proposal, *, actor) -> None:
    """Maintainers and followers of the repository hear of a new proposal."""


def review_requested(proposal, *, user, actor) -> None:
    """`user` was asked to review (by `actor`, or None for code owners)."""


def comment_added(comment, *, actor) -> None:
    """A comment or a reply: the proposal's author, the thread's participants, followers, and
    anyone @mentioned who may see the proposal."""


def approved(approval, *, actor) -> None:
    """The proposal's author and followers."""


def merged(proposal, *, actor) -> None:
    """The proposal's author, participants and followers."""


def conflict_appeared(proposal, *, files) -> None:
    """The target moved and the proposal no longer merges cleanly: its author."""


def check_failed(proposal, *, context: str, state: str, target_url: str = "") -> None:
    """A required or reported check failed on the proposal's head: its author."""
