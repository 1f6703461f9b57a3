"""The revision picker's shortcut: "changes since revision X", X being the newest revision this
user approved or commented on (where they last looked), or else the one before the latest."""

from __future__ import annotations

from django import template
from django.db.models import Max

from reviews.models import Approval, Comment

register = template.Library()


@register.simple_tag
def changes_since(proposal, latest, user) -> int | None:
    """The revision number to compare the latest with, or None when there is only one."""
    if latest is None or latest.number < 2:
        return None
    seen = None
    if user is not None and user.is_authenticated:
        approved = Approval.objects.filter(proposal=proposal, user=user).aggregate(n=Max("revision__number"))
        commented = Comment.objects.filter(proposal=proposal, author=user).aggregate(
            n=Max("revision__number")
        )
        numbers = [n for n in (approved["n"], commented["n"]) if n is not None and n < latest.number]
        seen = max(numbers, default=None)
    return seen or latest.number - 1
