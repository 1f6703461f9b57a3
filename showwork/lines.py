"""Where public commits lie: the branches' first-parent lines, read with one rev-list, and
the edges that join the shown public commits along them with the number of commits skipped
(showwork.selection's step 3; name-rev places commits off every line)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from gitcore.git import run_git
from repos.models import Repository

# Without any base, a window of this many commits: only tips are shown then.
LINES_WITHOUT_BASES = 10_000
# How much older than the oldest base a branch tip may be and still get a line (committer
# dates are not always in order: clocks, rebases).
CLOCK_SKEW = 86_400
_NAME_REV = re.compile(r"^([0-9a-f]{40,64}) \((.*)\)$")


@dataclass
class _Line:
    branch: str
    chain: list[str]  # the tip, then first parents down (never a commit an earlier line holds)
    join: str | None  # the commit below the chain that an earlier line holds


class Lines:
    """The branches' first-parent lines, the default branch's first, each down to the oldest
    base or to where it meets a line already drawn. Every commit on them has one place."""

    def __init__(
        self, lines: list[_Line], tips: dict[str, str], where: dict[str, tuple[int, int]] | None = None
    ):
        self.lines = lines
        self.tips = tips
        if where is None:
            where = {sha: (i, pos) for i, line in enumerate(lines) for pos, sha in enumerate(line.chain)}
        self.where = where

    def place(self, branch: str, steps: int) -> tuple[int, int] | None:
        """The place of the commit `steps` first-parent steps below a branch's tip (name-rev's
        reading of a commit in a side branch: the place of the merge that brought it)."""
        at = self.where.get(self.tips.get(branch, ""))
        if at is None:
            return None
        line, pos = at
        return line, min(pos + steps, len(self.lines[line].chain))

    def segments(self, branch: str) -> dict[int, int]:
        """line -> the first position of it that the branch's history reaches."""
        reach: dict[int, int] = {}
        at = self.where.get(self.tips.get(branch, ""))
        while at is not None and reach.get(at[0], len(self.lines[at[0]].chain) + 1) > at[1]:
            reach[at[0]] = at[1]
            join = self.lines[at[0]].join
            at = self.where.get(join) if join else None
        return reach


def read_lines(
    repo: Repository,
    branches: dict[str, str],
    default: str,
    stop: str | None,
    *,
    dates: dict[str, int] | None = None,
    stop_date: int | None = None,
) -> Lines:
    """One rev-list over the branches' first-parent lines, down to `stop`'s parents (without
    a stop, a window of LINES_WITHOUT_BASES commits: only tips are shown then).

    A branch whose tip is older than the stop (`dates`, `stop_date`; by more than CLOCK_SKEW)
    gets no line: nothing shown can lie on it (a base on it would be older than its tip, and
    the stop is the oldest base), and walking from it made git walk the whole history down to
    it, every commit of every merged side branch included, to find where the stop's ancestry
    covers it: an old release branch or a tag-era topic branch cost 200 ms on 200,000
    commits. Its tip is shown unplaced, as a tip the stop's history already holds is."""
    order = sorted(branches, key=lambda b: (b != default, b))
    if not order:
        return Lines([], {})
    walked = branches
    if stop and dates is not None and stop_date is not None:
        walked = {
            b: sha
            for b, sha in branches.items()
            if b == default or dates.get(b, stop_date) >= stop_date - CLOCK_SKEW
        }
    args = ["rev-list", "--first-parent", "--stdin"]
    single = len(set(branches.values())) == 1
    if not single:
        args.append("--parents")  # several lines interleave: rebuild each from its parents
    if stop:
        args += ["--not", f"{stop}^@"]
    else:
        args.append(f"--max-count={LINES_WITHOUT_BASES}")
    out = run_git(
        args, repo=repo.disk_path, input="".join(sorted({t + "\n" for t in walked.values()})).encode()
    ).stdout.decode()
    if single:
        # One tip: rev-list prints its first-parent line in order.
        return Lines([_Line(order[0], out.split(), None)], branches)
    # Rows are "<id> <first parent> <other parents>" with ids of one length. A root commit's
    # row has no parent ("").
    n = len(next(iter(walked.values())))
    first = {row[:n]: row[n + 1 : 2 * n + 1] for row in out.split("\n") if row}
    # Each line down to the first commit an earlier line holds: `where` is built on the way.
    where: dict[str, tuple[int, int]] = {}
    lines = []
    for i, name in enumerate(order):
        chain: list[str] = []
        sha = walked.get(name, "")
        while sha and sha not in where and sha in first:
            where[sha] = (i, len(chain))
            chain.append(sha)
            sha = first[sha]
        lines.append(_Line(name, chain, sha if sha in where else None))
    return Lines(lines, branches, where)


def name_rev(repo: Repository, shas: list[str], pattern: str = "refs/heads/*") -> dict[str, tuple[str, int]]:
    """sha -> (branch, steps) from name-rev, for public commits off every first-parent line
    (inside merged side branches): the length of the name's path counts the steps."""
    if not shas:
        return {}
    out = run_git(
        ["name-rev", f"--refs={pattern}", "--annotate-stdin"],
        repo=repo.disk_path,
        input="".join(s + "\n" for s in shas).encode(),
    ).stdout.decode("utf-8", "surrogateescape")
    found = {}
    for line in out.splitlines():
        match = _NAME_REV.match(line)
        if not match:
            continue
        name = match[2].removeprefix("heads/")
        branch = re.split(r"[~^]", name, maxsplit=1)[0]
        steps = 0
        for op, number in re.findall(r"([~^])(\d*)", name[len(branch) :]):
            steps += int(number or 1) if op == "~" else 1
        found[match[1]] = (branch, steps)
    return found


def public_edges(
    shas: set[str], lines: Lines, placed: dict[str, tuple[int, int]]
) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each shown public commit joined to the next one below it on its line (across the place
    where the line meets an earlier one), with the number of commits skipped in between."""
    on_line: dict[int, list[tuple[int, str]]] = {}
    for sha in shas:
        at = placed.get(sha) or lines.where.get(sha)
        if at is not None:
            on_line.setdefault(at[0], []).append((at[1], sha))
    for row in on_line.values():
        row.sort()

    def below(line: int, pos: int) -> tuple[str, int] | None:
        row = on_line.get(line, [])
        i = bisect.bisect_right(row, (pos, "\uffff"))
        if i < len(row):
            return row[i][1], row[i][0] - pos - 1
        join = lines.lines[line].join
        if join is None:
            return None
        here = len(lines.lines[line].chain) - pos - 1
        line2, pos2 = lines.where[join]
        if join in shas:
            return join, here
        rest = below(line2, pos2)
        return (rest[0], here + 1 + rest[1]) if rest else None

    edges: dict[str, tuple[tuple[str, int], ...]] = {sha: () for sha in shas}
    for line, row in on_line.items():
        for pos, sha in row:
            nxt = below(line, pos)
            if nxt is not None and nxt[0] != sha:
                edges[sha] = ((nxt[0], max(nxt[1], 0)),)
    return edges
