"""`git blame --incremental` read as it arrives: who last changed each line of a file.

git reports runs of lines (entries) in the order it finds them, newest commits first, not in
file order. `Attribution` collects them and hands out, as soon as every line above them is
known, the groups a page shows: runs of consecutive lines last changed by one commit. When
git is stopped early (the time limit), what it found so far is still shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.core.cache import cache

from gitcore.git import run_git
from render.gitquote import unquote_path

AGE_CLASSES = 10  # age-0 (the newest) to age-9 (the oldest): see static/css/blame.css


@dataclass
class BlameCommit:
    sha: str
    author: str = ""
    time: int = 0
    summary: str = ""
    # The commit and path a line had before this commit changed it ("blame prior to this
    # change"); None for a root commit or the edge of the history.
    previous: tuple[str, str] | None = None


@dataclass(frozen=True)
class Group:
    """Lines `start`..`end` (1-based, inclusive) last changed by `commit` (None: not known,
    git was stopped before it got there)."""

    commit: BlameCommit | None
    start: int
    end: int


@dataclass
class Attribution:
    """Entries in, groups out in file order (`ready`), the rest at the end (`finish`)."""

    lines: int
    commits: dict[str, BlameCommit] = field(default_factory=dict)
    _owner: list[str | None] = field(init=False)
    _next: int = 1  # the first line not yet handed out
    _open: Group | None = None  # the last group, held back until its run is known to end

    def __post_init__(self) -> None:
        self._owner = [None] * (self.lines + 2)

    def feed(self, raw: Iterator[bytes]) -> Iterator[list[Group]]:
        """Read git's incremental output line by line; after each entry, the groups it
        completed (often none: a line above is still unknown)."""
        current: BlameCommit | None = None
        span: tuple[int, int] = (0, 0)
        for line in raw:
            line = line.rstrip(b"\n")
            key, _, value = line.partition(b" ")
            if current is None:
                parts = line.split()
                if len(parts) != 4:
                    continue
                sha = parts[0].decode("ascii", "replace")
                current = self.commits.setdefault(sha, BlameCommit(sha))
                span = (int(parts[2]), int(parts[3]))
            elif key == b"author":
                current.author = value.decode("utf-8", "replace")
            elif key == b"author-time":
                current.time = int(value or 0)
            elif key == b"summary":
                current.summary = value.decode("utf-8", "replace")
            elif key == b"previous":
                prior_sha, _, prior_path = value.partition(b" ")
                prior = unquote_path(prior_path).decode("utf-8", "surrogateescape")
                current.previous = (prior_sha.decode("ascii", "replace"), prior)
            elif key == b"filename":  # the last line of every entry
                start, count = span
                for n in range(max(start, 1), min(start + count, self.lines + 1)):
                    self._owner[n] = current.sha
                current = None
                yield list(self._advance())

    def _advance(self) -> Iterator[Group]:
        while self._next <= self.lines and self._owner[self._next] is not None:
            yield from self._take(self._owner[self._next], self._next)
            self._next += 1

    def _take(self, sha: str | None, n: int) -> Iterator[Group]:
        commit = self.commits.get(sha) if sha else None
        held = self._open
        if held is not None and held.commit is commit and held.end == n - 1:
            self._open = Group(commit, held.start, n)
            return
        if held is not None:
            yield held
        self._open = Group(commit, n, n)

    def finish(self) -> Iterator[Group]:
        """Every line not handed out yet: known ones by their commit, the others unknown."""
        for n in range(self._next, self.lines + 1):
            yield from self._take(self._owner[n], n)
        self._next = self.lines + 1
        if self._open is not None:
            yield self._open
            self._open = None

    @property
    def complete(self) -> bool:
        return all(self._owner[n] is not None for n in range(1, self.lines + 1))


@dataclass(frozen=True)
class AgeScale:
    """Commit times mapped to AGE_CLASSES shades, from the history's first commit (palest) to
    the blamed revision (darkest): fixed before the first line goes out, so a streamed page
    never has to recolour what it already sent."""

    oldest: int
    newest: int

    def age_class(self, when: int) -> int:
        if self.newest <= self.oldest:
            return 0
        fraction = (self.newest - min(max(when, self.oldest), self.newest)) / (self.newest - self.oldest)
        return min(AGE_CLASSES - 1, int(fraction * AGE_CLASSES))


def age_scale(path: Path, sha: str) -> AgeScale:
    """The scale for blaming at `sha`: its author time and its root commits' earliest one.
    Walking to the roots costs a whole-history walk once; a commit's roots never change, so
    the answer is cached by commit id."""
    key = f"blame-age:{sha}"
    found = cache.get(key)
    if found is None:
        newest = run_git(["log", "-1", "--format=%at", sha, "--"], repo=path).text.strip()
        roots = run_git(
            ["rev-list", "--max-parents=0", "--no-commit-header", "--format=%at", sha], repo=path
        ).text.split()
        times = [int(t) for t in roots if t.isdigit()]
        found = (min(times) if times else int(newest or 0), int(newest or 0))
        cache.set(key, found, 7 * 24 * 3600)
    return AgeScale(*found)
