"""What threads read from git: which blob a path is at a commit, a blob's lines, and how the
lines of one blob map onto another's (`git diff -U0`, of two commits for many paths at once, or
of two blobs).

Commits and blobs never change, so line maps are cached in Django's cache under the object
ids they were computed from and never invalidated.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.cache import cache

from gitcore.git import run_git
from render import diffs

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
    one `git cat-file --batch-check` for all of them. Not cached here: its callers cache what
    they derive from it (reviews.threads.carry), which is one entry instead of one a spec."""
    wanted = list(dict.fromkeys(specs))
    found: dict[tuple[str, str], BlobRef | None] = {}
    # One spec a line: a path with a newline cannot be asked for (nor anchored).
    missing = [spec for spec in wanted if spec[1] and "\n" not in spec[1]]
    if missing:
        fmt = "--batch-check=%(objectname) %(objecttype) %(objectsize)"
        body = "".join(f"{commit}:{path}\n" for commit, path in missing).encode("utf-8", "surrogateescape")
        lines = run_git(["cat-file", fmt], repo=repo, input=body).text.split("\n")
        for spec, line in zip(missing, lines, strict=False):
            match = _FOUND.fullmatch(line)
            found[spec] = BlobRef(match[1], int(match[3])) if match and match[2] == "blob" else None
    return {spec: found.get(spec) for spec in wanted}


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


@dataclass(frozen=True)
class FilePair:
    """One file on two commits (the same path, or a renamed one) with its blob on each."""

    old_commit: str
    new_commit: str
    old_path: str
    new_path: str
    old_blob: str
    new_blob: str

    @property
    def blobs(self) -> tuple[str, str]:
        return self.old_blob, self.new_blob


def hunks_between(repo: Path | str, pairs: Iterable[FilePair]) -> dict[tuple[str, str], list[Hunk]]:
    """{(old blob, new blob): the -U0 hunks that turn one into the other}. One `git diff` per
    pair of commits for the paths it was not asked about yet, cached as one entry per pair of
    commits ({path: hunks}, grown as threads on more files ask); a renamed file is diffed
    blob to blob and cached by its blobs; equal blobs need nothing."""
    wanted = [p for p in dict.fromkeys(pairs) if p.old_blob != p.new_blob]
    by_commits: dict[tuple[str, str], list[FilePair]] = {}
    renamed = []
    for pair in wanted:
        if pair.old_path == pair.new_path:
            by_commits.setdefault((pair.old_commit, pair.new_commit), []).append(pair)
        else:
            renamed.append(pair)
    keys = {commits: _key("hunks", *commits) for commits in by_commits}
    keys.update({p.blobs: _key("blobhunks", *p.blobs) for p in renamed})
    cached = cache.get_many(list(keys.values()))
    found: dict[tuple[str, str], list[Hunk]] = {}
    learned: dict[str, Any] = {}
    for commits, batch in by_commits.items():
        known: dict[str, list] = cached.get(keys[commits], {})
        asked = sorted({p.old_path for p in batch} - known.keys())
        if asked:
            diffed = _diff_hunks(repo, [*commits, "--", *asked])
            known = {**known, **{path: diffed.get(path, []) for path in asked}}
            learned[keys[commits]] = known
        for pair in batch:
            found[pair.blobs] = [tuple(h) for h in known[pair.old_path]]  # type: ignore[misc]  # four ints each
    for pair in renamed:
        hunks = cached.get(keys[pair.blobs])
        if hunks is None:
            hunks = learned[keys[pair.blobs]] = next(iter(_diff_hunks(repo, list(pair.blobs)).values()), [])
        found[pair.blobs] = [tuple(h) for h in hunks]
    if learned:
        cache.set_many(learned, CACHE_SECONDS)
    return found


def _diff_hunks(repo: Path | str, args: list[str]) -> dict[str | None, list[Hunk]]:
    """{path: hunks} of `git diff -U0 <args>` (two blobs: one entry, named by a blob id)."""
    argv = [
        "-c",
        "core.quotePath=false",
        "diff",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--text",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        *args,
    ]
    out = run_git(argv, repo=repo, env={"GIT_LITERAL_PATHSPECS": "1"}).stdout
    found: dict[str | None, list[Hunk]] = {}
    path: str | None = None
    skip = 0  # content lines of the current hunk: never headers, whatever they start with
    for line in out.split(b"\n"):
        if skip and line[:1] in (b"+", b"-"):
            skip -= 1
            continue
        if line.startswith(b"diff --git "):
            path = None
        elif line.startswith(b"--- ") and line != b"--- /dev/null" and path is None:
            path = diffs.unquote(line[len(b"--- ") :]).removeprefix("a/")
        elif line.startswith(b"+++ ") and line != b"+++ /dev/null" and path is None:
            path = diffs.unquote(line[len(b"+++ ") :]).removeprefix("b/")
        elif match := _HUNK.match(line):
            hunk = (
                int(match[1]),
                int(match[2]) if match[2] is not None else 1,
                int(match[3]),
                int(match[4]) if match[4] is not None else 1,
            )
            found.setdefault(path, []).append(hunk)
            skip = hunk[1] + hunk[3]
    return found


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
