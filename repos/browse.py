"""Read-only views of a repository's contents for the web pages (full browsing comes later)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from repos.git import run_git


@dataclass(frozen=True)
class Ref:
    name: str
    sha: str
    kind: str  # "branch" or "tag"


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    when: datetime
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:10]


def refs(path: Path) -> list[Ref]:
    out = run_git(
        ["for-each-ref", "--format=%(refname)%00%(objectname)", "refs/heads/", "refs/tags/"], repo=path
    ).text
    result = []
    for line in out.splitlines():
        name, _, sha = line.partition("\0")
        if name.startswith("refs/heads/"):
            result.append(Ref(name[len("refs/heads/") :], sha, "branch"))
        elif name.startswith("refs/tags/"):
            result.append(Ref(name[len("refs/tags/") :], sha, "tag"))
    return result


def recent_commits(path: Path, branch: str, limit: int = 10) -> list[Commit]:
    ref = f"refs/heads/{branch}"
    if run_git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo=path, check=False).returncode:
        return []
    out = run_git(
        ["log", f"--max-count={limit}", "--format=%H%x00%an%x00%at%x00%s%x1e", ref, "--"], repo=path
    ).stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, author, ts, subject = record.split("\0", 3)
        commits.append(Commit(sha, author, datetime.fromtimestamp(int(ts), tz=UTC), subject))
    return commits
