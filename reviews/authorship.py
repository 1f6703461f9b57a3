"""Who wrote a squash: the proposal author's git identity as their commits spell it, and a
`Co-authored-by:` trailer for everyone else whose commits were squashed.

The author is the identity among the squashed commits whose email is the proposal author's
account email or commit email (the most frequent such identity; on a tie the earliest). When
none matches (the proposal was opened for someone, or they commit under another address), the
most frequent author of the range is used, so the squash is never credited to an address nobody
committed with. With no commits to read, the account's identity (reviews.mergetree.identity_of).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from gitcore.git import run_git
from reviews.mergetree import Identity, identity_of

_CONTROL = re.compile(r"[\x00-\x1f\x7f<>]")


def _authors(path: Path, target: str, head: str) -> list[Identity]:
    """Authors of target..head, oldest commit first."""
    out = run_git(
        ["log", "--reverse", "--format=%an%x00%ae", f"{target}..{head}", "--"], repo=path
    ).stdout.decode("utf-8", "replace")
    found = []
    for line in out.splitlines():
        name, _, email = line.partition("\0")
        name, email = _CONTROL.sub("", name).strip()[:100], _CONTROL.sub("", email).strip()[:200]
        if email:
            found.append(Identity(name or email, email))
    return found


def _most_frequent(identities: list[Identity]) -> Identity:
    counts = Counter(identities)
    best = max(counts.values())
    return next(i for i in identities if counts[i] == best)  # the earliest of the most frequent


def squash_authors(path: Path, target: str, head: str, user) -> tuple[Identity, list[Identity]]:
    """(author, co-authors) for squashing target..head proposed by `user`."""
    authors = _authors(path, target, head)
    if not authors:
        return identity_of(user), []
    mine = {e.lower() for e in (user.email, getattr(user, "commit_email", "")) if e}
    matching = [a for a in authors if a.email.lower() in mine]
    author = _most_frequent(matching or authors)
    seen = {author.email.lower()}
    others = []
    for identity in authors:
        if identity.email.lower() not in seen:
            seen.add(identity.email.lower())
            others.append(identity)
    return author, others


def trailers(co_authors: list[Identity]) -> str:
    return "".join(f"Co-authored-by: {a.name} <{a.email}>\n" for a in co_authors)
