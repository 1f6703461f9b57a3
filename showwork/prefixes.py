"""Short hashes: one common width for a view, and resolving a prefix back to commits.

The width starts from git's own abbreviations (`%h` with `--abbrev=4`: the shortest prefix,
at least 4, unique among *all* objects of the repository, blobs and trees included), which
the selection's log calls print anyway, so finding it costs no extra git process. A prefix
that is also the name of a branch or tag would be read as that ref by git and by people, so
the width grows until none is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gitcore.git import run_git
from gitcore.gittools import disambiguate
from gitcore.oids import parse_prefix_for

MIN_WIDTH = 4
HEX_PREFIX = re.compile(r"^[0-9a-f]{4,64}$")


def common_width(
    abbrevs: Iterable[str], branches: Iterable[str], tags: Iterable[str], shas: Iterable[str]
) -> int:
    """The one width for a view: the longest of the commits' unique abbreviations, grown past
    any width at which some commit's prefix equals a branch or tag name."""
    shas = list(shas)
    width = max([MIN_WIDTH, *(len(a) for a in abbrevs)])
    names = {n for n in (*branches, *tags) if HEX_PREFIX.match(n)}
    if not shas:
        return width
    longest = max(len(s) for s in shas)
    while width < longest and any(sha[:width] in names for sha in shas):
        width += 1
    return width


def shortest_unique(path, shas: list[str]) -> dict[str, str]:
    """sha -> git's shortest unique abbreviation (at least 4), for commits named elsewhere."""
    if not shas:
        return {}
    out = run_git(
        ["log", "--no-walk", "--format=%H %h", "--abbrev=4", "--stdin"],
        repo=path,
        input="".join(s + "\n" for s in shas).encode(),
    ).text
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def candidates(path, written: str) -> list[str] | None:
    """The commits whose id starts with `written` (4 hex digits up to a whole id of the
    repository's format, any case: gitcore.oids), or None when it is not a valid prefix.
    `rev-parse --disambiguate` lists every object with that prefix; one `cat-file
    --batch-check` keeps the commits."""
    prefix = parse_prefix_for(path, written)
    if prefix is None:
        return None
    found = disambiguate(path, prefix)
    if not found:
        return []
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        repo=path,
        input="".join(s + "\n" for s in found).encode(),
    ).text
    return sorted(line.split()[0] for line in out.splitlines() if line.endswith(" commit"))
