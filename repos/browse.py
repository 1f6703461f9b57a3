"""Read-only views of a repository's contents for the web pages: refs, revisions, trees,
blobs and history."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.core.cache import cache

from gitcore import catfile, gitobjects
from gitcore.git import GitError, run_git
from gitcore.gittools import disambiguate, is_full_id, text_ref_map
from gitcore.oids import object_format
from repos import refnav
from repos.visibility import EVERYTHING, View

# Fragments cached by object ids, which never change: bump the version when their shape does.
# The repository's path is in every key too, so nothing one repository stores (say through
# replace refs) is ever read for another.
FRAGMENT_VERSION = 1
FRAGMENT_SECONDS = 7 * 86400


def fragment_digest(path: Path, *parts) -> str:
    return hashlib.sha256(repr((str(path), *parts)).encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Ref:
    name: str
    sha: str
    kind: str  # "branch" or "tag"


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    when: datetime
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def refs(path: Path) -> list[Ref]:
    result = []
    for name, sha in text_ref_map(path, "refs/heads/", "refs/tags/").items():
        if name.startswith("refs/heads/"):
            result.append(Ref(name[len("refs/heads/") :], sha, "branch"))
        elif name.startswith("refs/tags/"):
            result.append(Ref(name[len("refs/tags/") :], sha, "tag"))
    return result


def recent_commits(path: Path, branch: str, limit: int = 10) -> list[Commit]:
    """The newest commits of a branch, cached by its tip's id (a moved branch has a new key)."""
    tip = catfile.resolve(path, f"refs/heads/{branch}")
    if tip is None:
        return []
    key = f"browse:recent:{FRAGMENT_VERSION}:{fragment_digest(path, tip, limit)}"
    cached = cache.get(key)
    if isinstance(cached, list):
        return cached
    out = run_git(
        ["log", f"--max-count={limit}", "--format=%H%x00%an%x00%at%x00%s%x1e", tip, "--"], repo=path
    ).stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, ts, subject = record.split("\0", 3)
        commits.append(Commit(sha, author, datetime.fromtimestamp(int(ts), tz=UTC), subject))
    cache.set(key, commits, FRAGMENT_SECONDS)
    return commits


# --- Browsing: revisions, trees, blobs, history --------------------------------------------

# A revision a URL may name: a branch, a tag, a full ref or a hex object id; never a revision
# expression (`^`, `~`, `:`, `@{`, `..`) and never something git could read as an option.
_FORBIDDEN_IN_REV = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{")


def visible_commit(path: Path, written: str, view: View = EVERYTHING) -> str | None:
    """The commit a hex id names (any case, full or abbreviated) as this viewer may see it.

    Missing, not a commit, ambiguous, hidden from the viewer or not an id at all: each is
    None, so no page can tell them apart. Where something is hidden, an abbreviation is
    resolved among the objects the viewer may see only: otherwise "ambiguous" would betray a
    hidden object sharing the prefix."""
    fmt = object_format(path)
    prefix = fmt.parse_prefix(written)
    if prefix is None:
        return None
    if not view.restricts:
        return catfile.resolve(path, prefix)
    found = [prefix] if len(prefix) == fmt.hexsz else disambiguate(path, prefix)
    commits = {catfile.resolve(path, oid) for oid in found if view.object_visible(oid)} - {None}
    if len(commits) != 1:
        return None
    sha = commits.pop()
    return sha if sha and view.object_visible(sha) else None


def resolve_commit(path: Path, rev: str, view: View = EVERYTHING) -> str | None:
    """The commit a branch, tag, full ref (`refs/...`) or hex id names; branches win over tags,
    and names over ids. An ambiguous abbreviated id resolves to nothing (the pages answer 404),
    and so do refs and ids the viewer may not see (visible_commit)."""
    if not rev or len(rev) > 1024 or rev.startswith("-") or rev.endswith((".", "/", ".lock")):
        return None
    if _FORBIDDEN_IN_REV.search(rev) or "//" in rev or rev == "@":
        return None
    candidates = [f"refs/heads/{rev}", f"refs/tags/{rev}"]
    if rev.startswith("refs/") and view.ref_visible(rev):
        candidates.append(rev)
    for ref in candidates:
        sha = catfile.resolve(path, ref)
        if sha:
            return sha
    return visible_commit(path, rev, view)


@dataclass(frozen=True)
class Revision:
    name: str  # as written in the URL (a branch, a tag, or an object id)
    sha: str
    path: str  # the rest of the URL: a path inside the commit's tree ("" for the root)


def split_revision(path: Path, spec: str, view: View = EVERYTHING) -> Revision | None:
    """`<ref>/<path>` where the ref may itself contain slashes: the longest leading part that is
    a branch or tag wins (asked of the repository's cat-file, no process), then a workspace
    ref by its full name (refs/users/...) the viewer may see, else the first part as an object
    id the viewer may see (visible_commit)."""
    parts = spec.split("/")
    first = parts[0]
    if not first or first.startswith("-") or _FORBIDDEN_IN_REV.search(first):
        return None
    for cut in range(len(parts), 0, -1):
        name = "/".join(parts[:cut])
        # A part no ref name can hold (`:`, `^`, `..`) would read as revision syntax: skip it.
        if _FORBIDDEN_IN_REV.search(name) or name.endswith((".", ".lock")) or "//" in name:
            continue
        sha = catfile.resolve(path, f"refs/heads/{name}") or catfile.resolve(path, f"refs/tags/{name}")
        if sha:
            return Revision(name, sha, "/".join(parts[cut:]))
    if spec.startswith(refnav.WORKSPACES):
        found = refnav.workspace_revision(path, parts, view)
        if found:
            return Revision(*found)
    sha = visible_commit(path, first, view)
    return Revision(first, sha, "/".join(parts[1:])) if sha else None


def clean_path(raw: str) -> str | None:
    """A path inside a tree as the URL gives it, or None when it is not one: no `.`/`..`
    segments, no empty segments (a trailing slash is allowed), no NUL, not absurdly long."""
    raw = raw.removesuffix("/")
    if not raw:
        return ""
    if "\0" in raw or len(raw) > 4096:
        return None
    segments = raw.split("/")
    if any(s in ("", ".", "..") for s in segments):
        return None
    return raw


@dataclass(frozen=True)
class Entry:
    mode: str
    kind: str  # "blob", "tree" or "commit" (a submodule)
    sha: str
    size: int | None
    path: str  # from the root of the tree

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def is_dir(self) -> bool:
        return self.kind == "tree"

    @property
    def is_link(self) -> bool:
        return self.mode == "120000"


def _ls_tree(path: Path, args: list[str]) -> list[Entry]:
    out = run_git(
        ["ls-tree", "-z", "-l", "--full-tree", *args], repo=path, env={"GIT_LITERAL_PATHSPECS": "1"}
    ).stdout
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, sha, size = meta.split()
        entries.append(
            Entry(
                mode.decode(),
                kind.decode(),
                sha.decode(),
                None if size == b"-" else int(size),
                name.decode("utf-8", "surrogateescape"),
            )
        )
    return entries


def _tree_items(path: Path, spec: str) -> list[gitobjects.TreeItem] | None:
    found = catfile.read(path, spec)
    if found is None or found[0].type != "tree":
        return None
    return gitobjects.parse_tree(found[1], len(found[0].oid) // 2)


def _entries(path: Path, items: list[gitobjects.TreeItem], prefix: str) -> list[Entry]:
    """Entries with the sizes of their blobs (one cat-file exchange for all of them)."""
    blobs = [item.oid for item in items if item.kind == "blob"]
    sizes = {oid: info.size for oid, info in zip(blobs, catfile.infos(path, blobs), strict=True) if info}
    base = f"{prefix}/" if prefix else ""
    return [
        Entry(i.mode, i.kind, i.oid, sizes.get(i.oid), base + i.name.decode("utf-8", "surrogateescape"))
        for i in items
    ]


def entry_at(path: Path, commit: str, item: str) -> Entry | None:
    """The tree entry at `item` in the commit ("" is the root tree): its parent directory's
    tree read through cat-file, no process."""
    if not item:
        tree = catfile.resolve(path, commit, "tree")
        return Entry("040000", "tree", tree, None, "") if tree else None
    if "\n" in item:  # cat-file reads one name per line; ls-tree takes this one
        found = _ls_tree(path, [commit, "--", item])
        return next((e for e in found if e.path == item), None)
    parent, _, name = item.rpartition("/")
    items = _tree_items(path, f"{commit}:{parent}" if parent else f"{commit}^{{tree}}")
    wanted = name.encode("utf-8", "surrogateescape")
    match = next((i for i in items or () if i.name == wanted), None)
    return _entries(path, [match], parent)[0] if match else None


def list_tree(path: Path, tree_sha: str, prefix: str) -> list[Entry]:
    """A directory's entries, directories first, then by name; cached by the tree's id."""
    key = f"browse:tree:{FRAGMENT_VERSION}:{fragment_digest(path, tree_sha)}"
    cached = cache.get(key) if is_full_id(tree_sha) else None
    if not isinstance(cached, list):
        items = _tree_items(path, tree_sha)
        if items is None:
            raise GitError(["cat-file", "tree", tree_sha], 128, "not a tree")
        cached = sorted(_entries(path, items, ""), key=lambda e: (not e.is_dir, e.name.lower(), e.name))
        if is_full_id(tree_sha):
            cache.set(key, cached, FRAGMENT_SECONDS)
    base = f"{prefix}/" if prefix else ""
    return [Entry(e.mode, e.kind, e.sha, e.size, base + e.path) for e in cached]


def read_blob(path: Path, sha: str, *, limit: int | None = None) -> bytes:
    """A blob's bytes through cat-file; catfile.TooLarge beyond `limit` bytes (nothing read)."""
    found = catfile.read(path, sha, limit=limit)
    if found is None or found[0].type != "blob":
        raise GitError(["cat-file", "blob", sha], 128, "not a blob")
    return found[1]


def is_binary(data: bytes) -> bool:
    """git's own test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]
