"""Parsing git's raw tree and commit objects (as `cat-file --batch` gives them), so the pages
read them from gitcore.catfile instead of starting `ls-tree` or `log` for each.

Not dulwich's parsers (bench/git_parsers.py, every commit and tree of this project): its C tree
parser, with its tuples turned into the TreeItems pages read, took 0.93 to 1.37 times this
one's time over three runs, no gain worth a runtime dependency; its commits took 1.3 to 7.9
times as long over four runs and give bytes, which pages would still decode by the `encoding` header as
parse_commit does. Of the odd commits
real histories hold, it reads one unlike `git log`: with two author (or committer) headers,
git log shows the last, dulwich the first."""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True)
class TreeItem:
    mode: str  # as git writes it in the tree ("40000" for a directory), normalised to 6 digits
    kind: str  # "blob", "tree" or "commit" (a submodule)
    oid: str
    name: bytes


def _kind(mode: str) -> str:
    if mode == "040000":
        return "tree"
    if mode == "160000":
        return "commit"
    return "blob"


def parse_tree(data: bytes, oid_bytes: int) -> list[TreeItem]:
    """A tree's entries, in the tree's order: `<mode> <name>\\0<binary id>` repeated.
    `oid_bytes` is 20 (SHA-1) or 32 (SHA-256). ValueError when the data is not a tree."""
    items = []
    pos, end = 0, len(data)
    while pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode("ascii").rjust(6, "0")
        oid = data[nul + 1 : nul + 1 + oid_bytes]
        if len(oid) != oid_bytes:
            raise ValueError("truncated tree")
        items.append(TreeItem(mode, _kind(mode), oid.hex(), data[space + 1 : nul]))
        pos = nul + 1 + oid_bytes
    return items


@dataclass(frozen=True)
class RawCommit:
    tree: str
    parents: tuple[str, ...]
    author: str  # "Name <email> <seconds> <zone>"
    committer: str
    message: str


def _decoder(encoding: str | None):
    try:
        return codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return "utf-8"


def parse_commit(data: bytes) -> RawCommit:
    """The headers git's pages need and the message, decoded as the commit's `encoding` header
    says (UTF-8 when absent), broken bytes replaced, as `git log` re-encodes them."""
    head, _, message = data.partition(b"\n\n")
    tree, parents, author, committer, encoding = "", [], b"", b"", None
    for line in head.split(b"\n"):
        if line.startswith(b" "):  # the continuation of a multi-line header (gpgsig, mergetag)
            continue
        key, _, value = line.partition(b" ")
        if key == b"tree":
            tree = value.decode("ascii")
        elif key == b"parent":
            parents.append(value.decode("ascii"))
        elif key == b"author":
            author = value
        elif key == b"committer":
            committer = value
        elif key == b"encoding":
            encoding = value.decode("ascii", "replace")
    codec = _decoder(encoding)
    return RawCommit(
        tree,
        tuple(parents),
        author.decode(codec, "replace"),
        committer.decode(codec, "replace"),
        message.decode(codec, "replace"),
    )


def split_ident(ident: str) -> tuple[str, str, int]:
    """("Name", "email", seconds) of "Name <email> 1700000000 +0000"; zeros when malformed."""
    name, _, rest = ident.partition("<")
    email, _, when = rest.partition(">")
    seconds = when.split()[0] if when.split() else "0"
    return name.strip(), email, int(seconds) if seconds.lstrip("-").isdigit() else 0
