"""What one person may see of one repository's history: the one rule every exit asks.

Pages, the API, the pushlog and its feeds, webhooks, git (v0 and v2, every command), archives,
bundles and search all call `view_for(repo, user)` and ask the View it returns, instead of
each deciding for itself. repos knows no moderation: the workspaces app registers the provider
that restricts taken-down and hidden work (workspaces.visibility); without one, everything
in a readable repository is visible.

Object ids from the network are normalised with `normalize_oid` before any comparison:
git accepts upper-case hex, and a check that compares strings as given can be walked around.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_FULL_OID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
# An abbreviated id as pages take it (/c/<prefix>, compare); git's own minimum is 4.
_PREFIX = re.compile(r"[0-9a-fA-F]{4,64}")

TAKEN_DOWN_MESSAGE = "this content was taken down"


def normalize_oid(text: str | bytes | None) -> str | None:
    """A full object id (40 or 64 hex digits, any case) in git's lower-case form, or None."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    if not text or not _FULL_OID.fullmatch(text.strip()):
        return None
    return text.strip().lower()


def normalize_prefix(text: str | None) -> str | None:
    """An abbreviated or full id in lower case, or None if it is not hex of a usable length."""
    if not text or not _PREFIX.fullmatch(text):
        return None
    return text.lower()


class View:
    """Everything is visible: the view of staff, and of every reader where nothing is moderated."""

    restricts = False

    def ref_visible(self, ref: str) -> bool:
        return True

    def username_visible(self, username: str) -> bool:
        """Whether the viewer may see the workspace, pushes and proposals of this user."""
        return True

    def object_visible(self, oid: str) -> bool:
        """`oid` must be normalised (normalize_oid) or come from git itself."""
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

_provider: Callable[..., View] | None = None


def register(provider: Callable[..., View]) -> None:
    """provider(repo, user) -> View. One provider: the rule lives in one place."""
    global _provider
    _provider = provider


def view_for(repo, user) -> View:
    if _provider is None:
        return EVERYTHING
    return _provider(repo, user)


def refuse_republishing(repo, user, tips: Iterable[str]) -> None:
    """For web writes (restore, proposal, merge): Forbidden if history from `tips` reaches
    content hidden from `user`, as the pre-receive hook refuses such a push."""
    from repos.errors import Forbidden

    if view_for(repo, user).reaches_hidden(tips):
        raise Forbidden(
            f"{TAKEN_DOWN_MESSAGE.capitalize()} (or hidden) by a moderator: it cannot be published again.",
            code="content_taken_down",
        )
