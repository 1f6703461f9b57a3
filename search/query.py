"""A search as the user typed it, checked once before any engine sees it."""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("code", "repositories", "commits", "proposals", "users")
# What the API serves (users are searched on the page only).
API_KINDS = ("code", "repositories", "commits", "proposals")
MAX_LENGTH = 256
# Trigram indexes need three characters to narrow anything down.
MIN_CODE_LITERAL = 3
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")
_NUMBER = re.compile(r"#?([0-9]{1,9})")


class QueryError(ValueError):
    """The search cannot run as asked; the message says what to change (answered with 400)."""


@dataclass(frozen=True)
class Query:
    text: str
    regex: bool = False

    @property
    def terms(self) -> tuple[str, ...]:
        """Words for the prose engines, each searched as a literal."""
        return tuple(self.text.split())

    @property
    def sha_prefix(self) -> str | None:
        """The text as an abbreviated commit id, in lower case, if it looks like one."""
        return self.text.lower() if _HEX.fullmatch(self.text) else None

    @property
    def number(self) -> int | None:
        """The text as a proposal number (`12` or `#12`)."""
        match = _NUMBER.fullmatch(self.text)
        return int(match.group(1)) if match else None

    def like_pattern(self) -> str:
        """`%text%` for LIKE/ILIKE with `\\` as the escape: %, _ and \\ in the text are literals."""
        return "%" + escape_like(self.text) + "%"


def escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def parse(text: str | None, *, regex: bool = False) -> Query | None:
    """The query, None when there is nothing to search, or QueryError."""
    text = (text or "").strip()
    if "\0" in text:
        raise QueryError("A search cannot contain a NUL character.")
    if len(text) > MAX_LENGTH:
        raise QueryError(f"Searches are at most {MAX_LENGTH} characters.")
    if not text:
        return None
    # A regular expression is checked by the database that runs it (PostgreSQL's syntax is not
    # Python's): an invalid one is answered with a message there (search.backend).
    return Query(text=text, regex=regex)


def check_for(kind: str, query: Query, *, vendor: str) -> None:
    """What an engine cannot do, refused with a message rather than a slow or empty answer."""
    if query.regex and kind != "code":
        raise QueryError("Regular expressions search code only.")
    if kind != "code":
        return
    if query.regex and vendor != "postgresql":
        raise QueryError("Regular expression search needs the PostgreSQL database; search for a literal.")
    if not query.regex and len(query.text) < MIN_CODE_LITERAL:
        raise QueryError(f"Code search needs at least {MIN_CODE_LITERAL} characters.")
