"""Git plumbing for web edits: read tree entries, write blobs, rewrite trees, write commits.
No working tree and no index: `hash-object -w --stdin` for the new contents, `mktree` for each
tree on the way from a changed entry to the root, `commit-tree` for the commit.

mktree rather than `read-tree` into a temporary index: the index canonicalises every entry of
the whole tree on the way back (a legacy mode such as 100664 becomes 100644), so an edit of
one file of an old history would rewrite trees it never touched. Here only the trees on the
changed paths are written again, every other tree stays the same object, and the rewritten
trees' other entries keep their modes as stored (symbolic links, submodules, names that are
not UTF-8, legacy modes; only a zero-padded `040000` loses its zero, which mktree drops).
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gitcore.git import run_git


@dataclass(frozen=True)
class Entry:
    mode: str  # as the tree stores it: "100644", "100755", "120000", "160000", "40000", or legacy
    oid: str
    name: bytes  # the full path from the root for entries_at, the name for read_tree

    @property
    def type(self) -> str:
        """The type mktree wants beside the mode: blob, tree, or commit (a submodule)."""
        return "tree" if self.is_tree else "commit" if self.mode == "160000" else "blob"

    @property
    def is_tree(self) -> bool:
        return self.mode.lstrip("0") == "40000"

    @property
    def is_file(self) -> bool:
        """A regular file, executable or not (legacy modes such as 100664 included)."""
        return self.mode.startswith("100")


def read_tree(repo: Path, tree: str) -> list[Entry]:
    """The entries of one tree (not recursive), modes as stored: from the raw object, since
    ls-tree shows legacy modes canonicalised and writing those back would change them."""
    raw = run_git(["cat-file", "tree", tree], repo=repo).stdout
    width = len(tree) // 2  # binary object ids: 20 bytes (SHA-1) or 32 (SHA-256)
    entries, at = [], 0
    while at < len(raw):
        space = raw.index(b" ", at)
        nul = raw.index(b"\0", space)
        oid = raw[nul + 1 : nul + 1 + width].hex()
        entries.append(Entry(raw[at:space].decode("ascii"), oid, raw[space + 1 : nul]))
        at = nul + 1 + width
    return entries


def entries_at(repo: Path, commit: str, paths: Iterable[bytes]) -> dict[bytes, Entry]:
    """{path: entry} for those of the paths that exist in the commit's tree. Walked tree by
    tree (ls-tree's pathspecs are patterns, and with several of them it recurses into
    directories named by one), each tree read once."""
    listings: dict[str, dict[bytes, Entry]] = {}

    def listing(tree: str) -> dict[bytes, Entry]:
        if tree not in listings:
            listings[tree] = {e.name: e for e in read_tree(repo, tree)}
        return listings[tree]

    root = tree_of(repo, commit)
    found = {}
    for path in set(paths):
        tree, parts = root, path.split(b"/")
        for i, part in enumerate(parts):
            entry = listing(tree).get(part)
            if entry is None:
                break
            if i == len(parts) - 1:
                found[path] = Entry(entry.mode, entry.oid, path)
            elif not entry.is_tree:
                break
            else:
                tree = entry.oid
    return found


def object_size(repo: Path, oid: str) -> int:
    return int(run_git(["cat-file", "-s", oid], repo=repo).text.strip())


def read_blob(repo: Path, oid: str) -> bytes:
    return run_git(["cat-file", "blob", oid], repo=repo).stdout


def tree_of(repo: Path, commit: str) -> str:
    return run_git(
        ["rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}"], repo=repo
    ).text.strip()


def write_blob(repo: Path, data: bytes) -> str:
    return run_git(["hash-object", "-w", "--stdin"], repo=repo, input=data).text.strip()


def _mktree(repo: Path, entries: Iterable[Entry]) -> str:
    body = b"".join(f"{e.mode} {e.type} {e.oid}\t".encode("ascii") + e.name + b"\0" for e in entries)
    return run_git(["mktree", "-z"], repo=repo, input=body).text.strip()


# A change: (mode, blob id) to write the path, None to remove it (a file or a whole directory).
Change = tuple[str, str] | None


def rewrite(repo: Path, tree: str | None, changes: Mapping[bytes, Change]) -> str:
    """The id of `tree` with the changes applied (full paths from its root). Directories
    left empty disappear, as git has no empty directories; the root may become the empty
    tree. Callers have checked that no path runs through a file."""
    return _rewrite(repo, tree, {tuple(p.split(b"/")): c for p, c in changes.items()}) or _mktree(repo, [])


def _rewrite(repo: Path, tree: str | None, changes: Mapping[tuple[bytes, ...], Change]) -> str | None:
    entries = {e.name: e for e in read_tree(repo, tree)} if tree else {}
    nested: dict[bytes, dict[tuple[bytes, ...], Change]] = defaultdict(dict)
    for parts, change in changes.items():
        if len(parts) > 1:
            nested[parts[0]][parts[1:]] = change
        elif change is None:
            entries.pop(parts[0], None)
        else:
            entries[parts[0]] = Entry(change[0], change[1], parts[0])
    for name, sub in nested.items():
        current = entries.get(name)
        subtree = _rewrite(repo, current.oid if current and current.is_tree else None, sub)
        if subtree is None:
            entries.pop(name, None)
        else:
            entries[name] = Entry("40000", subtree, name)
    return _mktree(repo, entries.values()) if entries else None


def commit_tree(repo: Path, tree: str, parent: str, message: str, *, name: str, email: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    args = ["commit-tree", tree, "-p", parent]
    return run_git(args, repo=repo, input=message.encode("utf-8"), env=env).text.strip()


def refused_objects(repo: Path, new: str, parent: str, severities: Mapping[str, str]) -> str | None:
    """What git's object checks (the same table a push is judged by, repos.objectcheck) say
    against the objects a web commit made, or None. A push's pack goes through index-pack
    --strict; so do these: packed, then indexed into a scratch object directory with the
    repository as its alternate, so nothing is written into the repository. The checks that
    need a path (a `.gitmodules` blob's URLs, say) run here as they do for a push."""
    pack = run_git(
        ["pack-objects", "--stdout", "--revs", "--quiet"], repo=repo, input=f"{new}\n^{parent}\n".encode()
    )
    strict = "--strict=" + ",".join(f"{msg_id}={severity}" for msg_id, severity in sorted(severities.items()))
    with tempfile.TemporaryDirectory(prefix="webedit-check-") as scratch:
        os.makedirs(os.path.join(scratch, "pack"))
        env = {
            "GIT_OBJECT_DIRECTORY": scratch,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(Path(repo) / "objects"),
        }
        result = run_git(
            ["index-pack", "--stdin", strict], repo=repo, input=pack.stdout, env=env, check=False
        )
    if result.returncode == 0:
        return None
    return result.stderr.decode("utf-8", "replace")
