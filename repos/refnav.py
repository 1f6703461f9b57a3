"""Refs as the pages navigate them: the branch and tag lists of the switcher, the sidebar and
the compare picker (tags in version order, branches by their newest commit), and workspace
refs named by their full name in a URL (`/tree/refs/users/<user>/<name>/<path>`).

Only branches and tags are ever listed here; workspace refs are reached by name, and only
where the viewer's View shows them, so a hidden or taken-down ref answers like a missing one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.core.cache import cache
from django.utils.encoding import repercent_broken_unicode

from gitcore.git import run_git
from gitcore.gittools import ref_map, rev_parse, text_refname
from gitcore.refstamp import refs_fingerprint
from repos.hooks import refspace
from repos.visibility import View

BRANCH, TAG = "branch", "tag"
NAMESPACES = {BRANCH: "refs/heads/", TAG: "refs/tags/"}
WORKSPACES = refspace.WORKSPACES
# What a workspace owner's name may not hold in a for-each-ref pattern: no glob, no revision
# syntax, nothing git's check-ref-format refuses anyway.
_UNSAFE_NAME = re.compile(r"[\x00-\x20\x7f~^:?*\[\\%]|\.\.|@\{")


@dataclass(frozen=True)
class NamedRef:
    name: str  # without its namespace; bytes that are not UTF-8 kept as surrogates
    sha: str

    @property
    def text(self) -> str:
        """The name for the page (U+FFFD where it is not UTF-8)."""
        return text_refname(self.name)

    @property
    def quoted(self) -> str:
        """The name as a URL path (slashes kept); a name that is not UTF-8 cannot be matched
        back from a URL, so such a ref is linked by its object id."""
        return quote(self.name) if self.text == self.name else self.sha


LISTING_VERSION = 1
LISTING_SECONDS = 86400


def _listed(path: Path, kind: str, sort: str) -> list[NamedRef]:
    """One for-each-ref, cached until a branch or tag changes (a stat walk, no process)."""
    stamp = refs_fingerprint(path, ("refs/heads", "refs/tags"))
    key = (
        "refnav:"
        + hashlib.sha256(
            f"{LISTING_VERSION}\0{path}\0{kind}\0{sort}\0{stamp}".encode("utf-8", "surrogateescape")
        ).hexdigest()
    )
    found = cache.get(key)
    if not isinstance(found, list):
        found = _for_each_ref(path, kind, sort)
        cache.set(key, found, LISTING_SECONDS)
    return found


def _for_each_ref(path: Path, kind: str, sort: str) -> list[NamedRef]:
    prefix = NAMESPACES[kind]
    out = run_git(
        ["for-each-ref", f"--sort={sort}", "--format=%(refname)%00%(objectname)", prefix], repo=path
    ).stdout.decode("utf-8", "surrogateescape")
    refs = []
    for line in out.split("\n"):
        name, _, sha = line.partition("\0")
        if name.startswith(prefix) and sha:
            refs.append(NamedRef(name[len(prefix) :], sha))
    return refs


def branches(path: Path, default_branch: str) -> list[NamedRef]:
    """The default branch first, then the others by their newest commit, newest first."""
    listed = _listed(path, BRANCH, "-committerdate")
    return sorted(listed, key=lambda ref: ref.name != default_branch)  # stable: keeps the date order


def tags(path: Path) -> list[NamedRef]:
    """Newest version first, as `git tag --sort=-v:refname`: v1.10 before v1.9 before v1.2."""
    return _listed(path, TAG, "-v:refname")


def listing(path: Path, kind: str, default_branch: str) -> list[NamedRef]:
    return branches(path, default_branch) if kind == BRANCH else tags(path)


def matching(
    path: Path, kind: str, default_branch: str, view: View, query: str = "", limit: int = 100
) -> tuple[list[NamedRef], int]:
    """The refs of one kind whose name holds `query` (any case), as the viewer may see them, at
    most `limit` of them, and how many matched in all."""
    needle = query.casefold()
    prefix = NAMESPACES[kind]
    found = [
        ref
        for ref in listing(path, kind, default_branch)
        if needle in ref.text.casefold() and view.ref_visible(prefix + ref.name)
    ]
    return found[:limit], len(found)


def url_form(name: str) -> str:
    """A ref name as Django hands it to a view after a link to it was followed: bytes that are
    not UTF-8 stay percent-encoded."""
    return repercent_broken_unicode(name.encode("utf-8", "surrogateescape")).decode("ascii", "replace")


def workspace_revision(path: Path, parts: list[str], view: View) -> tuple[str, str, str] | None:
    """For `refs/users/<user>/<name...>/<path...>` split at its slashes: (the name the page
    goes on with, the commit, the rest as a path), where the longest leading part that names a
    workspace ref the viewer may see wins; else None, hidden and missing alike. A ref whose
    name is not UTF-8 goes on by its commit id, which every link can carry."""
    if len(parts) < 4 or parts[0] != "refs" or parts[1] != "users":
        return None
    user = parts[2]
    if (
        not user
        or user.startswith(("-", "."))
        or _UNSAFE_NAME.search(user)
        or not view.username_visible(user)
    ):
        return None
    listed = {url_form(name): (name, oid) for name, oid in ref_map(path, f"{WORKSPACES}{user}/").items()}
    for cut in range(len(parts), 3, -1):
        found = listed.get("/".join(parts[:cut]))
        if found is None:
            continue
        name, oid = found
        commit = rev_parse(path, oid) if view.ref_visible(name) else None
        if commit is None or not view.object_visible(commit):
            return None
        label = name if text_refname(name) == name else commit
        return label, commit, "/".join(parts[cut:])
    return None
