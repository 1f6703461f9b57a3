"""The arguments of `git archive --remote`, checked before git sees them.

git's upload-archive would take any ref by name, hidden ones included, so the tree-ish is
resolved here under the viewer's visibility (repos.browse.resolve_commit, the rule of the web's
archive route) and git is handed the commit id; only the options that shape the archive pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import BinaryIO, cast

from gitcore import pktline
from gitcore.git import run_git
from repos import browse
from sshgit.commands import shown

MAX_ARGS = 64
MAX_ARG = 4096
FORMATS = frozenset({"tar", "zip", "tar.gz", "tgz"})
_LEVEL = re.compile(r"^-[0-9]$")
# git's revision suffixes that stay within what the named commit reaches: its ancestors
# (`~2`, `^`, `^2`) and a directory of its tree (`<rev>:<path>`).
_WALK = re.compile(r"(?:[~^][0-9]{0,6})+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ArchiveRefused(Exception):
    pass


def read(reader) -> list[str]:
    """The `argument <arg>` packets up to the flush-pkt."""
    args: list[str] = []
    while True:
        try:
            _raw, payload = pktline.read_pkt(cast(BinaryIO, reader))
        except (EOFError, pktline.PktLineError) as exc:
            raise ArchiveRefused(f"malformed request: {exc or 'it ended early'}") from None
        if payload is None:
            return args
        if not payload.startswith(b"argument ") or len(payload) > MAX_ARG or len(args) >= MAX_ARGS:
            raise ArchiveRefused("malformed request")
        try:
            args.append(payload[len(b"argument ") :].rstrip(b"\n").decode("utf-8"))
        except UnicodeDecodeError:
            raise ArchiveRefused("arguments must be UTF-8") from None


def resolve(repo_path: Path, args: list[str], view) -> list[str]:
    """The arguments for git: the options allowed, the commit id, the paths."""
    options: list[str] = []
    rest = list(args)
    while rest and rest[0].startswith("-"):
        arg = rest.pop(0)
        if arg.startswith("--format="):
            if arg.removeprefix("--format=") not in FORMATS:
                raise ArchiveRefused(f"unknown archive format {shown(arg)!r}: use tar, tgz or zip")
        elif not (arg.startswith("--prefix=") or _LEVEL.match(arg)):
            raise ArchiveRefused(f"option {shown(arg)!r} is not allowed here")
        if "\n" in arg or "\0" in arg:
            raise ArchiveRefused("control characters are not allowed")
        options.append(arg)
    if not rest:
        raise ArchiveRefused("name a branch, tag or commit to archive")
    treeish, paths = rest[0], rest[1:]
    resolved = _resolve_treeish(repo_path, treeish, view)
    if resolved is None:
        raise ArchiveRefused(f"no branch, tag or commit {shown(treeish)!r}")
    for path in paths:
        if path.startswith((":", "-")) or not path or "\0" in path:
            raise ArchiveRefused(f"not a plain path: {shown(path)!r}")
    return [*options, resolved, *paths]


def _resolve_treeish(repo_path: Path, treeish: str, view) -> str | None:
    """`HEAD`, a branch, tag or id the viewer may see, with git's ancestry and tree-path
    suffixes (`HEAD~1`, `v1.0:docs`), as `git archive` is documented and used: the name is
    resolved under the viewer's visibility, and git is given the commit id with the suffix,
    which reaches nothing the commit does not."""
    rev, colon, path = treeish.partition(":")
    if _CONTROL.search(path):
        return None
    walk = _WALK.search(rev)
    suffix = walk.group(0) if walk else ""
    base = rev[: len(rev) - len(suffix)]
    if base == "HEAD":
        head = run_git(["symbolic-ref", "--quiet", "HEAD"], repo=repo_path, check=False)
        base = head.stdout.decode().strip() if head.returncode == 0 else ""
    sha = browse.resolve_commit(repo_path, base, view)
    return None if sha is None else f"{sha}{suffix}{colon}{path}"
