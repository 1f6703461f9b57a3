"""Reading workspaces out of git: who has refs, where each ref stands against the default branch,
and what it would bring in."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from gitcore import gittools
from gitcore.git import run_git
from gitcore.gittools import count_refs, rev_parse
from repos.browse import Commit
from repos.hooks import refspace
from repos.models import Repository


@dataclass(frozen=True)
class WorkspaceRef:
    ref: str
    name: str  # the part after refs/users/<user>/
    sha: str
    committed: datetime
    subject: str
    ahead: int | None = None
    behind: int | None = None


def _users_refs(repo: Repository, prefix: str = refspace.WORKSPACES) -> list[tuple[str, str, int, str]]:
    out = run_git(
        [
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents:subject)",
            prefix,
        ],
        repo=repo.disk_path,
    ).stdout.decode("utf-8", "replace")
    rows = []
    for line in out.splitlines():
        ref, sha, when, subject = line.split("\0", 3)
        rows.append((ref, sha, int(when or 0), subject))
    return rows


def workspace_summary(repo: Repository) -> dict[str, dict]:
    """username -> {"refs": count, "last_commit": datetime} for every user with workspace refs."""
    summary: dict[str, dict] = {}
    for ref, _sha, when, _subject in _users_refs(repo):
        user = ref.split("/", 3)[2]
        entry = summary.setdefault(user, {"refs": 0, "last_commit": None})
        entry["refs"] += 1
        moment = datetime.fromtimestamp(when, tz=UTC)
        if entry["last_commit"] is None or moment > entry["last_commit"]:
            entry["last_commit"] = moment
    return summary


def count_user_refs(repo: Repository, username: str) -> int:
    return count_refs(repo.disk_path, refspace.workspace_prefix(username))


def _default_tip(repo: Repository) -> str | None:
    return rev_parse(repo.disk_path, f"refs/heads/{repo.default_branch}")


def _workspace_ref(prefix: str, row: tuple[str, str, int, str]) -> WorkspaceRef:
    ref, sha, when, subject = row
    return WorkspaceRef(ref, ref[len(prefix) :], sha, datetime.fromtimestamp(when, tz=UTC), subject)


def user_refs(repo: Repository, username: str) -> list[WorkspaceRef]:
    """The user's refs, newest commit first, from one for-each-ref; ahead/behind not filled in
    (see with_counts)."""
    prefix = refspace.workspace_prefix(username)
    refs = [_workspace_ref(prefix, row) for row in _users_refs(repo, prefix)]
    return sorted(refs, key=lambda r: r.committed, reverse=True)


def user_ref(repo: Repository, username: str, ref: str) -> WorkspaceRef | None:
    prefix = refspace.workspace_prefix(username)
    # for-each-ref matches a pattern as a whole name or up to a slash: keep the exact one.
    return next((_workspace_ref(prefix, row) for row in _users_refs(repo, ref) if row[0] == ref), None)


def with_counts(repo: Repository, refs: list[WorkspaceRef]) -> list[WorkspaceRef]:
    """The refs with ahead/behind the default branch filled in. One rev-list per ref (git 2.39
    has no batch form; `%(ahead-behind:)` came in 2.41), so callers pass one page of refs."""
    base = _default_tip(repo)
    if not base:
        return list(refs)
    counted = []
    for r in refs:
        counts = run_git(
            ["rev-list", "--left-right", "--count", f"{base}...{r.sha}"], repo=repo.disk_path, check=False
        ).text.split()
        behind, ahead = (int(counts[0]), int(counts[1])) if len(counts) == 2 else (None, None)
        counted.append(replace(r, ahead=ahead, behind=behind))
    return counted


def ref_commits(repo: Repository, ref: str, limit: int = 250) -> list[Commit]:
    """Commits on the ref that are not on the default branch, newest first."""
    base = _default_tip(repo)
    args = ["log", f"--max-count={limit}", "--format=%H%x00%an%x00%at%x00%s%x1e", ref]
    if base:
        args.append(f"^{base}")
    out = run_git([*args, "--"], repo=repo.disk_path).stdout.decode("utf-8", "replace")
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if record:
            sha, author, ts, subject = record.split("\0", 3)
            commits.append(Commit(sha, author, datetime.fromtimestamp(int(ts), tz=UTC), subject))
    return commits


def merge_base(repo: Repository, ref: str) -> str | None:
    """Where the ref left the default branch: the base of its combined diff (what merging
    brings). None without common history (the diff is then against the empty tree)."""
    base = _default_tip(repo)
    if not base:
        return None
    return gittools.merge_base(repo.disk_path, base, ref)
