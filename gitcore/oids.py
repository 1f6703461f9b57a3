"""Object ids from the network, read exactly as git reads them for the repository's format.

git reads an id in a request as the first `hexsz` characters after the keyword (40 in a SHA-1
repository, 64 in a SHA-256 one), upper or lower case, and ignores whatever follows: a `want`
of a taken-down id padded with 24 more digits looked like an unknown SHA-256 id to a check that
accepted "40 or 64", while git served the first 40. So every id that comes in (protocol lines,
URLs, API fields, push commands) is read here, with the repository's own format: exactly
`hexsz` hex digits, any case, nothing before or after; anything else is not an id. The result is
git's lower-case spelling, the one every comparison uses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gitcore.git import run_git

_HEX = frozenset("0123456789abcdefABCDEF")
# git's own minimum for an abbreviated id.
MIN_ABBREV = 4


@dataclass(frozen=True)
class ObjectFormat:
    name: str
    hexsz: int

    @property
    def zero(self) -> str:
        return "0" * self.hexsz

    def parse(self, text: str | bytes | None) -> str | None:
        """A whole id of this format (exactly `hexsz` hex digits, any case) in lower case;
        None for anything else, surrounding whitespace included."""
        if isinstance(text, bytes):
            try:
                text = text.decode("ascii")
            except UnicodeDecodeError:
                return None
        if text is None or len(text) != self.hexsz or not _HEX.issuperset(text):
            return None
        return text.lower()

    def parse_prefix(self, text: str | bytes | None) -> str | None:
        """An abbreviated or whole id of this format (4 to `hexsz` hex digits, any case) in
        lower case, or None: longer than a whole id is no id at all to git."""
        if isinstance(text, bytes):
            try:
                text = text.decode("ascii")
            except UnicodeDecodeError:
                return None
        if text is None or not MIN_ABBREV <= len(text) <= self.hexsz or not _HEX.issuperset(text):
            return None
        return text.lower()

    def is_full(self, text: str | None) -> bool:
        """Whether `text` is already a whole id in git's spelling (lower case)."""
        return text is not None and len(text) == self.hexsz and self.parse(text) == text


SHA1 = ObjectFormat("sha1", 40)
SHA256 = ObjectFormat("sha256", 64)
FORMATS = {f.name: f for f in (SHA1, SHA256)}

# A repository's format is fixed when it is created; the key also holds the config file's
# identity, so a directory reused for another repository is read again.
_known: dict[tuple[str, int, int], ObjectFormat] = {}
_KNOWN_MAX = 4096


def object_format(gitdir: Path | str) -> ObjectFormat:
    """The object format git uses for this repository (asked of git once per repository and
    process: `rev-parse --show-object-format`, which reads the config as git does)."""
    try:
        st = os.stat(Path(gitdir) / "config")
        key = (str(gitdir), st.st_ino, st.st_mtime_ns)
    except OSError:
        key = (str(gitdir), 0, 0)
    found = _known.get(key)
    if found is None:
        name = run_git(["rev-parse", "--show-object-format"], repo=gitdir).text.strip()
        found = FORMATS.get(name)
        if found is None:
            raise ValueError(f"unknown object format {name!r}")
        if len(_known) >= _KNOWN_MAX:
            _known.clear()
        _known[key] = found
    return found


def is_printed_id(text: str | None) -> bool:
    """Whether `text` is a whole id of either format as git prints it (lower case): for values
    compared with git's own output, where another spelling simply matches nothing."""
    return SHA1.is_full(text) or SHA256.is_full(text)


def parse_for(gitdir: Path | str, text: str | bytes | None) -> str | None:
    """A whole id of this repository's format, or None (ObjectFormat.parse)."""
    return object_format(gitdir).parse(text)


def parse_prefix_for(gitdir: Path | str, text: str | bytes | None) -> str | None:
    """An abbreviated or whole id of this repository's format, or None."""
    return object_format(gitdir).parse_prefix(text)
