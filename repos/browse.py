"""Read-only views of a repository's contents for the web pages: refs, revisions, trees,
blobs and history."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from repos.git import run_git
from repos.gittools import disambiguate, ref_map, rev_parse, text_ref_map
from repos.visibility import EVERYTHING, View, normalize_prefix


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
    ref = f"refs/heads/{branch}"
    if rev_parse(path, ref) is None:
        return []
    out = run_git(
        ["log", f"--max-count={limit}", "--format=%H%x00%an%x00%at%x00%s%x1e", ref, "--"], repo=path
    ).stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, ts, subject = record.split("\0", 3)
        commits.append(Commit(sha, author, datetime.fromtimestamp(int(ts), tz=UTC), subject))
    return commits


# --- Browsing: revisions, trees, blobs, history --------------------------------------------

HEX = re.compile(r"^[0-9a-fA-F]{4,64}$")
# A revision a URL may name: a branch, a tag, a full ref or a hex object id; never a revision
# expression (`^`, `~`, `:`, `@{`, `..`) and never something git could read as an option.
_FORBIDDEN_IN_REV = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{")


def visible_commit(path: Path, written: str, view: View = EVERYTHING) -> str | None:
    """The commit a hex id names (any case, full or abbreviated) as this viewer may see it.

    Missing, not a commit, ambiguous, hidden from the viewer or not an id at all: each is
    None, so no page can tell them apart. Where something is hidden, an abbreviation is
    resolved among the objects the viewer may see only: otherwise "ambiguous" would betray a
    hidden object sharing the prefix."""
    prefix = normalize_prefix(written)
    if prefix is None:
        return None
    if not view.restricts:
        return rev_parse(path, prefix)
    found = [prefix] if len(prefix) in (40, 64) else disambiguate(path, prefix)
    commits = {rev_parse(path, oid) for oid in found if view.object_visible(oid)} - {None}
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
        sha = rev_parse(path, ref)
        if sha:
            return sha
    if HEX.match(rev):
        return visible_commit(path, rev, view)
    return None


@dataclass(frozen=True)
class Revision:
    name: str  # as written in the URL (a branch, a tag, or an object id)
    sha: str
    path: str  # the rest of the URL: a path inside the commit's tree ("" for the root)


def split_revision(path: Path, spec: str, view: View = EVERYTHING) -> Revision | None:
    """`<ref>/<path>` where the ref may itself contain slashes: the longest leading part that is
    a branch or tag wins (one for-each-ref over the names that share its first part), else
    the first part as an object id the viewer may see (visible_commit)."""
    parts = spec.split("/")
    first = parts[0]
    if not first or first.startswith("-") or _FORBIDDEN_IN_REV.search(first):
        return None
    listed = ref_map(path, f"refs/heads/{first}", f"refs/tags/{first}")
    names = {ref.split("/", 2)[2] for ref in listed if ref.count("/") >= 2}
    for cut in range(len(parts), 0, -1):
        name = "/".join(parts[:cut])
        if name in names:
            sha = resolve_commit(path, name)
            if sha:
                return Revision(name, sha, "/".join(parts[cut:]))
    if HEX.match(first):
        sha = visible_commit(path, first, view)
        if sha:
            return Revision(first, sha, "/".join(parts[1:]))
    return None


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


def entry_at(path: Path, commit: str, item: str) -> Entry | None:
    """The tree entry at `item` in the commit ("" is the root tree)."""
    if not item:
        tree = run_git(["rev-parse", f"{commit}^{{tree}}"], repo=path).text.strip()
        return Entry("040000", "tree", tree, None, "")
    found = _ls_tree(path, [commit, "--", item])
    return next((e for e in found if e.path == item), None)


def list_tree(path: Path, tree_sha: str, prefix: str) -> list[Entry]:
    """A directory's entries, directories first, then by name."""
    entries = _ls_tree(path, [tree_sha])
    base = f"{prefix}/" if prefix else ""
    listed = [Entry(e.mode, e.kind, e.sha, e.size, base + e.path) for e in entries]
    return sorted(listed, key=lambda e: (not e.is_dir, e.name.lower(), e.name))


def read_blob(path: Path, sha: str) -> bytes:
    return run_git(["cat-file", "blob", sha], repo=path).stdout


def is_binary(data: bytes) -> bool:
    """git's own test: a NUL byte in the first 8000 bytes."""
    return b"\0" in data[:8000]


@dataclass(frozen=True)
class CommitDetail:
    sha: str
    parents: tuple[str, ...]
    author: str
    author_email: str
    authored: datetime
    committer: str
    committer_email: str
    committed: datetime
    subject: str
    body: str

    @property
    def short(self) -> str:
        return self.sha[:10]


_DETAIL_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B%x1e"


def _details(out: bytes) -> list[CommitDetail]:
    commits = []
    for record in out.decode("utf-8", "replace").split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        sha, parents, an, ae, at, cn, ce, ct, message = record.split("\0", 8)
        subject, _, body = message.strip("\n").partition("\n")
        commits.append(
            CommitDetail(
                sha,
                tuple(parents.split()),
                an,
                ae,
                datetime.fromtimestamp(int(at or 0), tz=UTC),
                cn,
                ce,
                datetime.fromtimestamp(int(ct or 0), tz=UTC),
                subject,
                body.strip("\n"),
            )
        )
    return commits


def commit_detail(path: Path, sha: str) -> CommitDetail:
    out = run_git(["log", "-1", "--no-walk", f"--format={_DETAIL_FORMAT}", sha, "--"], repo=path).stdout
    return _details(out)[0]


def commit_details(path: Path, shas: list[str]) -> list[CommitDetail]:
    """These commits, in this order; those no longer in the repository are left out."""
    if not shas:
        return []
    args = ["log", "--ignore-missing", "--no-walk=unsorted", f"--format={_DETAIL_FORMAT}", *shas, "--"]
    return _details(run_git(args, repo=path).stdout)


def log(
    path: Path,
    rev: str,
    *,
    item: str = "",
    skip: int = 0,
    limit: int = 50,
    exclude: str | None = None,
) -> list[CommitDetail]:
    """Up to `limit` commits from `rev` (newest first), after skipping `skip`; only those
    touching `item` when given; none reachable from `exclude`."""
    args = ["log", f"--format={_DETAIL_FORMAT}", f"--skip={skip}", f"--max-count={limit}", rev]
    if exclude:
        args.append(f"^{exclude}")
    args += ["--", *([item] if item else [])]
    return _details(run_git(args, repo=path, env={"GIT_LITERAL_PATHSPECS": "1"}).stdout)
