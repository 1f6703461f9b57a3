"""The refs an admin may remove, listed: every namespace with its count, and one page of the
refs under a prefix (repos.refs_admin removes them). Workspace refs and the platform's
internal refs are never listed: workspaces have their own pages, internal refs are nobody's to
remove.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gitcore import gittools
from gitcore.git import is_valid_refname
from repos.errors import InvalidInput
from repos.hooks import refspace
from repos.models import Repository
from repos.names import IMPORTED_REFS

WORKSPACES = refspace.WORKSPACES
# The platform's own namespaces (workspaces.cleanup's archive, moderation's legal hold).
INTERNAL = refspace.INTERNAL
# Never listed here: workspaces have their own pages, internal refs are nobody's to remove.
UNLISTED = (WORKSPACES, *INTERNAL)
MAX_PER_PAGE = 500


@dataclass(frozen=True)
class RefEntry:
    ref: str  # bytes that are not UTF-8 kept as surrogates (gittools.list_refs): git gets it back
    oid: str
    symref: str = ""  # the target, when the ref is symbolic (refs/remotes/origin/HEAD)

    @property
    def undecodable(self) -> bool:
        """Whether the name holds bytes that are not UTF-8: a form cannot carry it back to name
        the ref, which is removed with its namespace, or by a push deleting it."""
        return gittools.text_refname(self.ref) != self.ref


@dataclass(frozen=True)
class Namespace:
    prefix: str  # "refs/pull/", or a ref of its own outside any namespace ("refs/stash")
    count: int

    @property
    def label(self) -> str:
        return {"refs/heads/": "branches", "refs/tags/": "tags"}.get(self.prefix, "")


@dataclass(frozen=True)
class RefListing:
    prefix: str  # without its trailing slash; "" for every listed ref
    namespaces: list[Namespace]
    refs: list[RefEntry]  # this page
    total: int  # refs under prefix
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


def namespace_of(ref: str) -> str:
    """refs/pull/1/head -> refs/pull/; under refs/imported/ one level deeper (refs/imported/pull/),
    since an import keeps every namespace of its source there."""
    parts = ref.split("/")
    depth = 3 if ref.startswith(IMPORTED_REFS) else 2
    return "/".join(parts[:depth]) + "/" if len(parts) > depth else ref


def under(ref: str, prefix: str) -> bool:
    """Component-wise: refs/pull matches refs/pull and refs/pull/1/head, never refs/pulls/x."""
    return not prefix or ref == prefix or ref.startswith(prefix + "/")


def read_refs(repo: Repository, patterns: Sequence[str]) -> list[RefEntry]:
    return [
        RefEntry(e.name, e.oid, e.symref)
        for e in gittools.list_refs(repo.disk_path, *patterns)
        if not e.name.startswith(UNLISTED)
    ]


def refs_under(repo: Repository, prefix: str = "") -> tuple[str, list[Namespace], list[RefEntry]]:
    """The prefix as understood, every listed ref's namespace with its count, and the refs
    under the prefix (all if empty). One for-each-ref over the repository: workspace refs are
    skipped as they are read (an admin's page; 100k of them cost ~0.1 s)."""
    bare = parse_prefix(prefix, listing=True)
    entries = read_refs(repo, ["refs/"])
    counts = Counter(namespace_of(e.ref) for e in entries)
    order = {"refs/heads/": 0, "refs/tags/": 1}
    namespaces = [
        Namespace(p, n) for p, n in sorted(counts.items(), key=lambda kv: (order.get(kv[0], 2), kv[0]))
    ]
    return bare, namespaces, [e for e in entries if under(e.ref, bare)]


def refs_list(repo: Repository, prefix: str = "", *, page: int = 1, per_page: int = 100) -> RefListing:
    """The namespaces with counts, and one page of the refs under `prefix`."""
    bare, namespaces, entries = refs_under(repo, prefix)
    per_page = max(1, min(int(per_page), MAX_PER_PAGE))
    pages = max(1, -(-len(entries) // per_page))
    page = max(1, min(int(page), pages))
    start = (page - 1) * per_page
    return RefListing(bare, namespaces, entries[start : start + per_page], len(entries), page, per_page)


def plausible(value: str) -> bool:
    """The checks that need no git: a full name under refs/, short, no control characters."""
    return (
        value.startswith("refs/")
        and len(value.encode()) <= 255
        and not value.endswith("/")
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
    )


def not_removable(ref: str) -> str | None:
    """Why a name (ref or namespace) is never removed here, or None."""
    if ref == WORKSPACES.rstrip("/") or ref.startswith(WORKSPACES):
        return (
            f"{ref} is a workspace ref: workspaces follow the workspace rules and have their own pages "
            f"(an admin may also delete one by push: git push origin :{ref})"
        )
    if any(ref == p.rstrip("/") or ref.startswith(p) for p in INTERNAL):
        return (
            f"{ref} is internal to the platform ({refspace.ARCHIVE} keeps deleted workspace refs restorable, "
            f"{refspace.TAKEDOWN} holds content under a moderator's take-down): nobody removes it by hand"
        )
    return None


def parse_prefix(value, *, listing: bool = False) -> str:
    """A namespace as given ("refs/pull/" or "refs/pull"), without its trailing slash."""
    if not isinstance(value, str):
        raise InvalidInput("A prefix is a string such as refs/pull/.", fields={"prefix": ["invalid"]})
    bare = value.strip()
    if bare.endswith("/"):
        bare = bare[:-1]
    if not bare and listing:
        return ""
    if bare.count("/") < 1 or not plausible(bare) or not is_valid_refname(bare):
        raise InvalidInput(
            f"{value[:80]!r} is not a ref namespace: give one such as refs/pull/.",
            fields={"prefix": ["invalid"]},
        )
    why = not_removable(bare)
    if why:
        raise InvalidInput(why, fields={"prefix": ["not_removable"]})
    return bare
