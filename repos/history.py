"""Commits as the pages show them: one commit's details (read through the repository's
cat-file), a list of given commits, and history pages (`git log`), cached by full ids."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.core.cache import cache

from gitcore import catfile, gitobjects
from gitcore.git import GitError, run_git
from gitcore.gittools import is_full_id
from repos.browse import FRAGMENT_SECONDS, FRAGMENT_VERSION, fragment_digest


@dataclass(frozen=True)
class CommitDetail:
    sha: str
    parents: tuple[str, ...]
    author: str
    author_email: str
    authored: datetime
    committer: str
    committer_email: str
    committed: datetime
    subject: str
    body: str

    @property
    def short(self) -> str:
        return self.sha[:10]


_DETAIL_FORMAT = "%H%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B%x1e"


def _details(out: bytes) -> list[CommitDetail]:
    commits = []
    for record in out.decode("utf-8", "replace").split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        sha, parents, an, ae, at, cn, ce, ct, message = record.split("\0", 8)
        subject, _, body = message.strip("\n").partition("\n")
        commits.append(
            CommitDetail(
                sha,
                tuple(parents.split()),
                an,
                ae,
                datetime.fromtimestamp(int(at or 0), tz=UTC),
                cn,
                ce,
                datetime.fromtimestamp(int(ct or 0), tz=UTC),
                subject,
                body.strip("\n"),
            )
        )
    return commits


def commit_detail(path: Path, sha: str) -> CommitDetail:
    """One commit, read through cat-file (as `git log -1` would show it)."""
    found = catfile.read(path, f"{sha}^{{commit}}")
    if found is None:
        raise GitError(["cat-file", "commit", sha], 128, "not a commit")
    raw = gitobjects.parse_commit(found[1])
    an, ae, at = gitobjects.split_ident(raw.author)
    cn, ce, ct = gitobjects.split_ident(raw.committer)
    subject, _, body = raw.message.strip("\n").partition("\n")
    return CommitDetail(
        found[0].oid,
        raw.parents,
        an,
        ae,
        datetime.fromtimestamp(at, tz=UTC),
        cn,
        ce,
        datetime.fromtimestamp(ct, tz=UTC),
        subject,
        body.strip("\n"),
    )


def commit_details(path: Path, shas: list[str]) -> list[CommitDetail]:
    """These commits, in this order; those no longer in the repository are left out."""
    if not shas:
        return []
    args = ["log", "--ignore-missing", "--no-walk=unsorted", f"--format={_DETAIL_FORMAT}", *shas, "--"]
    return _details(run_git(args, repo=path).stdout)


def log(
    path: Path,
    rev: str,
    *,
    item: str = "",
    skip: int = 0,
    limit: int = 50,
    exclude: str | None = None,
) -> list[CommitDetail]:
    """Up to `limit` commits from `rev` (newest first), after skipping `skip`; only those
    touching `item` when given; none reachable from `exclude`."""
    args = ["log", f"--format={_DETAIL_FORMAT}", f"--skip={skip}", f"--max-count={limit}", rev]
    if exclude:
        args.append(f"^{exclude}")
    args += ["--", *([item] if item else [])]
    # Cached by full ids only: a branch that moves is asked for by its new id.
    cacheable = is_full_id(rev) and (exclude is None or is_full_id(exclude))
    key = f"browse:log:{FRAGMENT_VERSION}:{fragment_digest(path, rev, item, skip, limit, exclude)}"
    cached = cache.get(key) if cacheable else None
    if isinstance(cached, list):
        return cached
    found = _details(run_git(args, repo=path, env={"GIT_LITERAL_PATHSPECS": "1"}).stdout)
    if cacheable:
        cache.set(key, found, FRAGMENT_SECONDS)
    return found
