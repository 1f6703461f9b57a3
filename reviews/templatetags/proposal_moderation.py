"""The moderation note of a proposal, for those who may read it: the repository's maintainers
and admins, and site staff. Its author and everyone else see only that it was closed."""

from __future__ import annotations

from django import template

from reviews.models import ClosedReason
from reviews.selectors import is_maintainer

register = template.Library()


def may_read_moderation_note(user, proposal) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or is_maintainer(user, proposal.repository)


@register.simple_tag
def moderation_note_for(proposal, user) -> str:
    """The note, or "" when there is none or `user` may not read it."""
    if not proposal.moderation_note or not may_read_moderation_note(user, proposal):
        return ""
    return proposal.moderation_note


@register.filter
def closed_by_moderation(proposal) -> bool:
    return proposal.closed_reason == ClosedReason.MODERATION
