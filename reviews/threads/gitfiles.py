"""What threads read from git: which blob a path is at a commit, a blob's lines, and how the
lines of one blob map onto another's (`git diff -U0 <blob> <blob>`).

Commits and blobs never change, so every answer is cached in Django's cache under the object
ids it was computed from and never invalidated: a proposal page shown again asks git nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from django.core.cache import cache

from repos.git import run_git

_FOUND = re.compile(r"([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)")
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DAY = 24 * 3600
CACHE_SECONDS = 30 * _DAY
BINARY_PROBE = 8000  # git's own test: a NUL in the first 8000 bytes makes a file binary

# (old_start, old_count, new_start, new_count) of one -U0 hunk.
Hunk = tuple[int, int, int, int]


@dataclass(frozen=True)
class BlobRef:
    oid: str
    size: int


def _key(kind: str, *parts: str) -> str:
    # Paths may hold anything (spaces, control characters) that cache backends refuse in keys.
    return (
        f"threads:{kind}:" + hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
    )


def blobs_at(repo: Path | str, specs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], BlobRef | None]:
    """{(commit, path): the blob there, or None (no such path, a directory, a submodule)} in
    one `git cat-file --batch-check` for all the specs the cache does not know."""
    wanted = list(dict.fromkeys(specs))
    keys = {spec: _key("blob", *spec) for spec in wanted}
    cached = cache.get_many(list(keys.values()))
    found: dict[tuple[str, str], BlobRef | None] = {}
    missing = []
    for spec in wanted:
        if keys[spec] in cached:
            hit = cached[keys[spec]]
            found[spec] = BlobRef(*hit) if hit else None
        elif "\n" in spec[1] or not spec[1]:
            found[spec] = None  # one spec a line: such a path cannot be asked for (nor anchored)
        else:
            missing.append(spec)
    if missing:
        fmt = "--batch-check=%(objectname) %(objecttype) %(objectsize)"
        body = "".join(f"{commit}:{path}\n" for commit, path in missing).encode("utf-8", "surrogateescape")
        lines = run_git(["cat-file", fmt], repo=repo, input=body).text.split("\n")
        learned = {}
        for spec, line in zip(missing, lines, strict=False):
            match = _FOUND.fullmatch(line)
            blob = BlobRef(match[1], int(match[3])) if match and match[2] == "blob" else None
            found[spec] = blob
            learned[keys[spec]] = (blob.oid, blob.size) if blob else ()
        cache.set_many(learned, CACHE_SECONDS)
    return found


def read_blob(repo: Path | str, oid: str) -> bytes:
    return run_git(["cat-file", "blob", oid], repo=repo).stdout


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def split_lines(data: bytes) -> list[str]:
    """The lines as git numbers them (line 1 first), without their line endings."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line starts no new one
    return [line.removesuffix("\r") for line in lines]


def hunks_between(repo: Path | str, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Hunk]]:
    """{(old blob, new blob): the -U0 hunks that turn one into the other}; a git process per
    pair the cache does not know, none for a pair of equal blobs."""
    wanted = [pair for pair in dict.fromkeys(pairs) if pair[0] != pair[1]]
    keys = {pair: _key("hunks", *pair) for pair in wanted}
    cached = cache.get_many(list(keys.values()))
    found: dict[tuple[str, str], list[Hunk]] = {}
    learned = {}
    for pair in wanted:
        if keys[pair] in cached:
            found[pair] = [tuple(h) for h in cached[keys[pair]]]  # type: ignore[misc]  # stored as lists of four ints
            continue
        found[pair] = _diff_hunks(repo, *pair)
        learned[keys[pair]] = found[pair]
    if learned:
        cache.set_many(learned, CACHE_SECONDS)
    return found


def _diff_hunks(repo: Path | str, old: str, new: str) -> list[Hunk]:
    args = ["diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--text", old, new]
    hunks = []
    for line in run_git(args, repo=repo).stdout.split(b"\n"):
        match = _HUNK.match(line)
        if match:
            hunks.append(
                (
                    int(match[1]),
                    int(match[2]) if match[2] is not None else 1,
                    int(match[3]),
                    int(match[4]) if match[4] is not None else 1,
                )
            )
    return hunks


def map_line(hunks: list[Hunk], line: int) -> int | None:
    """Where an unchanged line of the old blob is in the new one; None when it was changed
    or removed. With -U0, a hunk `-a,b +c,d` replaces old lines a..a+b-1 (none when b is 0:
    an insertion after line a) by new lines c..c+d-1 (none when d is 0: a removal after new
    line c); the first old line after it is new line `new_end`."""
    shift = 0
    for a, b, c, d in hunks:
        old_end = a + b if b else a + 1
        new_end = c + d if d else c + 1
        if line < (a if b else a + 1):
            break
        if b and line < old_end:
            return None
        shift = new_end - old_end
    return line + shift


def map_range(hunks: list[Hunk], start: int, end: int) -> tuple[int, int] | None:
    """The range in the new blob when every line of start..end is unchanged and nothing was
    inserted between them; else None (the thread is outdated)."""
    first, last = map_line(hunks, start), map_line(hunks, end)
    if first is None or last is None or last - first != end - start:
        return None
    if any(map_line(hunks, n) is None for n in range(start + 1, end)):
        return None
    return first, last
