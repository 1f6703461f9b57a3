"""File paths typed in the browser, checked before they reach a tree.

A path names an entry of a git tree, so the rules are git's own `verify_path` (what
`update-index` and `fsck` refuse, with core.protectNTFS on, git's default) plus what no
hosting page should create: no `..` or `.`, nothing absolute, no empty component, no `.git`
in any disguise (case, trailing dots or spaces, NTFS `git~1` and `.git::$INDEX_ALLOCATION`,
HFS's ignored characters), no NUL or control character, no backslash (a separator to git on
Windows), at most 4096 bytes and 255 per component. New names also may not hold invisible
or direction-changing characters (the rule pushes apply to ref names).

Paths are handled as bytes: a name in the tree that is not UTF-8 comes from the pages as text
with surrogate escapes, and goes back to git as the same bytes.
"""

from __future__ import annotations

from repos.errors import InvalidInput
from repos.hooks.refnames import INVISIBLE, shown

MAX_PATH_BYTES = 4096
MAX_COMPONENT_BYTES = 255
# Code points HFS+ ignores when it compares names: ".g\u200cit" is ".git" on a Mac (git's
# is_hfs_dotgit), so such a component would write into the repository of whoever checks it out.
HFS_IGNORED = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, *range(0x206A, 0x2070), 0xFEFF]
)


def _refuse(path: str, why: str) -> InvalidInput:
    return InvalidInput(
        f"{shown(path)[:300]!r} cannot be used as a file name: {why}.", fields={"path": [why]}
    )


def is_dotgit(component: str) -> bool:
    """Whether a path component reads as `.git` on some file system git protects."""
    name = "".join(c for c in component if ord(c) not in HFS_IGNORED).lower()
    name = name.split(":", 1)[0].rstrip(". ")
    return name in (".git", "git~1")


def to_bytes(path: str) -> bytes:
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise _refuse(path, "it is not valid UTF-8") from None


def from_bytes(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def check_path(path: str, *, new: bool = False) -> bytes:
    """The path as bytes for git, or InvalidInput saying what is wrong with it. `new`: the
    name is being created (an added or uploaded file), so invisible characters are refused."""
    if not isinstance(path, str) or path == "":
        raise InvalidInput("A file name is required.", fields={"path": ["required"]})
    if "\0" in path:
        raise _refuse(path, "it contains a NUL character")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in path):
        raise _refuse(path, "it contains a control character")
    raw = to_bytes(path)
    if len(raw) > MAX_PATH_BYTES:
        raise _refuse(path, f"it is longer than {MAX_PATH_BYTES} bytes")
    if path.startswith("/"):
        raise _refuse(path, "it is absolute (starts with /); give a path inside the repository")
    if "\\" in path:
        raise _refuse(path, "it contains a backslash, which git treats as a separator on Windows")
    for component in path.split("/"):
        if component == "":
            raise _refuse(path, "it has an empty component (// or a trailing /)")
        if component in (".", ".."):
            raise _refuse(path, f"it has a {component!r} component")
        if is_dotgit(component):
            raise _refuse(path, "it names git's own directory (.git)")
        if len(component.encode("utf-8", "surrogateescape")) > MAX_COMPONENT_BYTES:
            raise _refuse(path, f"a component is longer than {MAX_COMPONENT_BYTES} bytes")
    if new and (found := sorted({ord(c) for c in path if ord(c) in INVISIBLE})):
        chars = ", ".join(f"U+{cp:04X}" for cp in found)
        raise _refuse(path, f"it contains invisible or direction-changing characters ({chars})")
    return raw


def prefixes(raw: bytes) -> list[bytes]:
    """The directories above a path: b"a/b/c" -> [b"a", b"a/b"]."""
    parts = raw.split(b"/")
    return [b"/".join(parts[:i]) for i in range(1, len(parts))]
