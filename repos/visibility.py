"""What one person may see of one repository's history: the one rule every exit asks.

Pages, the API, the pushlog and its feeds, webhooks, git (v0 and v2, every command), archives,
bundles and search all call `view_for(repo, user)` and ask the View it returns, instead of
each deciding for itself. repos knows no moderation: settings.VISIBILITY_RULE names the rule
that restricts taken-down and hidden work (workspaces.visibility); without one, everything
in a readable repository is visible.

Object ids from the network are read with gitcore.oids before any comparison (exactly one whole
id of the repository's format, any case, in git's lower-case spelling): a check that reads an
id differently from git can be walked around.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from repos.errors import Forbidden

TAKEN_DOWN_MESSAGE = "this content was taken down"


class View:
    """Everything is visible: the view of staff, and of every reader where nothing is moderated."""

    restricts = False

    def ref_visible(self, ref: str) -> bool:
        return True

    def username_visible(self, username: str) -> bool:
        """Whether the viewer may see the workspace, pushes and proposals of this user."""
        return True

    def object_visible(self, oid: str) -> bool:
        """`oid` must be read with gitcore.oids (git's lower-case spelling) or come from git itself."""
        return True

    def hidden_objects(self, oids: Iterable[str]) -> set[str]:
        return set()

    def hidden_set(self) -> frozenset[str]:
        """Every object hidden from this viewer (small next to a history: moderated work only)."""
        return frozenset()

    def reaches_hidden(self, tips: Iterable[str]) -> bool:
        """Whether history from these tips (commits or other objects in the repository) reaches
        content only hidden refs reach: what a push, restore or merge may not re-publish."""
        return False

    def hidden_ref_prefixes(self) -> tuple[str, ...]:
        return ()


EVERYTHING = View()


@functools.cache
def _named(path: str) -> Callable[..., Any] | None:
    return import_string(path) if path else None


def view_for(repo, user) -> View:
    """settings.VISIBILITY_RULE(repo, user) -> View: one rule, in one place."""
    rule = _named(settings.VISIBILITY_RULE)
    return EVERYTHING if rule is None else rule(repo, user)


def refuse_republishing(repo, user, tips: Iterable[str]) -> None:
    """For web writes (restore, proposal, merge, web edit): Forbidden if history from `tips`
    reaches content that may not be published again, as the pre-receive hook refuses such a
    push."""
    # settings.REPUBLISHING_RULE(repo, user, tips): whether those tips reach such content.
    republishing = _named(settings.REPUBLISHING_RULE)
    if republishing is not None and republishing(repo, user, list(tips)):
        raise Forbidden(
            f"{TAKEN_DOWN_MESSAGE.capitalize()} or blocked by a moderator: it cannot be published again.",
            code="content_taken_down",
        )
