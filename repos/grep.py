"""Searching one revision of a repository with `git grep`, a page at a time.

git's output is read as it comes and git is stopped as soon as the page is full (or its time
limit passes), so a search on a large history costs what one page needs. Matches are found
by git alone: a pattern from the network is never run by Python's own regex engine, whose
backtracking cannot be interrupted. git marks each match with a colour escape of our
choosing, and the page highlights what lies between the marks.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from gitcore.git import stream_git

MAX_QUERY = 1000
MAX_PATH_FILTER = 500
PER_PAGE = 50
MAX_PAGE = 100  # past this, a narrower search is the answer
MAX_PER_FILE = 10  # matching lines shown per file (git grep --max-count)
MAX_LINE = 2000  # bytes of a matching line shown; the rest of a long line is dropped
# git colours matches with this (an unusual 24-bit colour, `bold #0a1b2c`) and ends them
# with a reset. A file holding these very bytes can only misplace its own highlight: the
# text is escaped like any other.
MATCH_COLOR = "bold #0a1b2c"
START = b"\x1b[1;38;2;10;27;44m"
END = b"\x1b[m"
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_BACKREFERENCE = re.compile(r"\\[1-9]")


class BadQuery(ValueError):
    """Input that is not a search: the page answers 400 with this message."""


@dataclass(frozen=True)
class Query:
    text: str
    regex: bool = False
    case: bool = False  # case-sensitive
    path: str = ""  # a validated pathspec glob, or "" for the whole tree


def parse_query(text: str, *, regex: bool, case: bool, path: str) -> Query:
    if len(text) > MAX_QUERY:
        raise BadQuery(f"The search is longer than {MAX_QUERY:,} characters.")
    if _CONTROL.search(text):
        raise BadQuery("The search contains control characters (a line break, a NUL).")
    # Backreferences make matching exponential in time and memory in glibc's regex engine;
    # the time limit would stop git, but not before it had taken the memory.
    if regex and _BACKREFERENCE.search(text):
        raise BadQuery("Backreferences (\\1 to \\9) are not supported in a search.")
    path = path.strip()
    if path:
        if len(path) > MAX_PATH_FILTER or _CONTROL.search(path):
            raise BadQuery("The path filter is too long or contains control characters.")
        # `:(...)`, `:!` and `:/` are pathspec magic; `..` and absolute paths name nothing inside
        # the tree. What is left is a glob git matches against paths from the root.
        if path.startswith((":", "/")) or ".." in path.split("/"):
            raise BadQuery("The path filter must be a path or a glob such as *.py or docs/, without : or ..")
    return Query(text, regex, case, path)


@dataclass(frozen=True)
class Match:
    path: str  # undecodable bytes kept as surrogates (os.fsdecode), for links
    line: int
    parts: tuple[tuple[str, bool], ...]  # the line as (text, is a match) runs
    cut: bool = False  # the line was longer than MAX_LINE


@dataclass
class Page:
    matches: list[Match] = field(default_factory=list)
    more: bool = False  # another page follows
    timed_out: bool = False
    error: str = ""  # git refused the pattern (an invalid regular expression)


def search(path: Path, sha: str, query: Query, *, page: int, timeout: float) -> Page:
    """Page `page` (1-based) of the matches of `query` in the tree of commit `sha`, in git's
    order (by path, then line), so a page's matches are the same on every request."""
    args = ["-c", f"color.grep.match={MATCH_COLOR}"]
    for slot in ("filename", "lineNumber", "separator", "selected", "context"):
        args += ["-c", f"color.grep.{slot}="]
    args += ["grep", "--color=always", "--null", "-n", "-I", f"--max-count={MAX_PER_FILE}", "--threads=2"]
    args += ["-E" if query.regex else "-F"]
    if not query.case:
        args.append("-i")
    args += ["-e", query.text, sha, "--"]
    if query.path:
        args.append(query.path)
    skip, wanted = (page - 1) * PER_PAGE, PER_PAGE + 1
    result = Page()
    prefix = f"{sha}:".encode()
    # GIT_LITERAL_PATHSPECS off: the one pathspec is the glob parse_query let through.
    with stream_git(args, repo=path, env={"GIT_LITERAL_PATHSPECS": "0"}, timeout=timeout) as git:
        reader = _Records(git.stdout)
        seen = 0
        while len(result.matches) < wanted:
            record = reader.next()
            if record is None:
                break
            seen += 1
            if seen > skip:
                name, number, content, cut = record
                name = name.removeprefix(prefix)
                result.matches.append(
                    Match(name.decode("utf-8", "surrogateescape"), number, _parts(content), cut)
                )
        else:
            result.more = True
        if not result.more:
            returncode = git.wait()
            if git.timed_out:
                result.timed_out = True
            elif returncode not in (0, 1):  # 1: nothing matched
                message = git.stderr.read(2000).decode("utf-8", "replace").strip()
                result.error = (
                    message.removeprefix("fatal: ").removeprefix("command line, ") or "git grep failed"
                )
    if result.more:
        result.matches.pop()
    return result


class _Records:
    """`<sha>:<path>\\0<line>\\0<text>\\n` records: a path may hold any byte but NUL (a
    newline too), so the stream is split by field, not by line."""

    def __init__(self, stream):
        self.stream = cast(io.BufferedReader, stream)
        self.buffer = b""
        self.eof = False

    def _field(self, end: bytes, limit: int) -> tuple[bytes, bool] | None:
        """Bytes up to `end` (consumed), at most `limit` of them kept; (field, was cut)."""
        kept, cut = b"", False
        while True:
            at = self.buffer.find(end)
            if at >= 0:
                piece, self.buffer = self.buffer[:at], self.buffer[at + 1 :]
            else:
                piece, self.buffer = self.buffer, b""
            cut = cut or len(kept) + len(piece) > limit
            kept += piece[: max(0, limit - len(kept))]
            if at >= 0:
                return kept, cut
            chunk = self.stream.read1(65536) if not self.eof else b""
            if not chunk:
                self.eof = True
                return (kept, cut) if kept else None
            self.buffer = chunk

    def next(self) -> tuple[bytes, int, bytes, bool] | None:
        name = self._field(b"\0", 1 << 16)
        number = self._field(b"\0", 32) if name else None
        content = self._field(b"\n", MAX_LINE) if number else None
        if name is None or number is None or content is None or not number[0].isdigit():
            return None
        return name[0], int(number[0]), content[0], content[1]


def _parts(content: bytes) -> tuple[tuple[str, bool], ...]:
    """The line split at git's match marks; marks cut off by MAX_LINE are dropped."""
    parts: list[tuple[str, bool]] = []
    rest = content
    while rest:
        start = rest.find(START)
        if start < 0:
            tail = rest
            if (esc := tail.rfind(b"\x1b")) >= 0 and esc > len(tail) - len(START) and b"m" not in tail[esc:]:
                tail = tail[:esc]  # a mark cut in half at MAX_LINE
            parts.append((tail.decode("utf-8", "replace"), False))
            break
        if start:
            parts.append((rest[:start].decode("utf-8", "replace"), False))
        rest = rest[start + len(START) :]
        end = rest.find(END)
        matched, rest = (rest, b"") if end < 0 else (rest[:end], rest[end + len(END) :])
        parts.append((matched.decode("utf-8", "replace"), True))
    return tuple((text, hit) for text, hit in parts if text)
