"""Keep one repository's code and commits in the index (search.tasks calls this after pushes).

Code: the files of the default branch. The first run reads the whole tree; later runs read
only what changed between the indexed commit and the branch's tip (`diff-tree`), with blobs
read in batches. Commits: those of refs/heads/* not indexed yet, oldest first, at most
COMMITS_PER_RUN per run; the tips of what is done are recorded, so the next run continues.

Commits that a force-push or a deleted branch took off every branch leave the index.

Every write is keyed (repository + path hash, repository + sha) and upserted, so a run that
is repeated (a task delivered twice) or interrupted changes nothing twice. One run per
repository at a time (repos.locking.claim)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import transaction

from gitcore.git import GitError
from gitcore.gittools import rev_parse
from repos.locking import claim
from repos.models import Repository
from search import gitread
from search.gitread import FileEntry
from search.models import CodeFile, CommitEntry, IndexState

LOCK_KIND = "search_index"
COMMITS_PER_RUN = 5000
ROWS_PER_WRITE = 500


def max_file_bytes() -> int:
    return int(settings.SITE_SEARCH_MAX_FILE_BYTES)


@dataclass(frozen=True)
class Outcome:
    busy: bool = False
    files_written: int = 0
    files_deleted: int = 0
    commits: int = 0
    more: bool = False  # commits are left for another run


def index_update(*, repo: Repository, commits_per_run: int = COMMITS_PER_RUN) -> Outcome:
    """Bring the repository's index up to its refs; Outcome(busy=True) if another run holds it."""
    held = claim(LOCK_KIND, repo.pk, note=f"search index (repository {repo.pk})")
    if held is None:
        return Outcome(busy=True)
    with held:
        state, _ = IndexState.objects.get_or_create(repository=repo)
        written, deleted = _index_code(repo, state)
        count, more = _index_commits(repo, state, commits_per_run)
        return Outcome(files_written=written, files_deleted=deleted, commits=count, more=more)


def index_reset(*, repo: Repository) -> None:
    """Forget everything indexed from git for this repository (the next run starts over)."""
    with transaction.atomic():
        CodeFile.objects.filter(repository=repo).delete()
        CommitEntry.objects.filter(repository=repo).delete()
        IndexState.objects.filter(repository=repo).delete()


def _index_code(repo: Repository, state: IndexState) -> tuple[int, int]:
    path = Path(repo.disk_path)
    branch = repo.default_branch
    tip = rev_parse(path, f"refs/heads/{branch}")
    if tip is None:
        deleted, _ = CodeFile.objects.filter(repository=repo).delete()
        _save(state, code_branch=branch, code_commit="")
        return 0, deleted
    if state.code_branch == branch and state.code_commit == tip:
        return 0, 0
    incremental = state.code_branch == branch and state.code_commit
    changed: list[FileEntry]
    if incremental:
        try:
            changed, gone = gitread.changed_files(path, state.code_commit, tip)
        except GitError:
            incremental = False  # the indexed commit was pruned: read the whole tree
    if incremental:
        sizes = gitread.object_sizes(path, {entry.oid for entry in changed})
        changed = [FileEntry(e.path, e.oid, sizes.get(e.oid)) for e in changed]
        deleted = _delete_paths(repo, gone)
    else:
        changed = gitread.tree_files(path, tip)
        keep = {_path_hash(entry.path) for entry in changed}
        stale = set(CodeFile.objects.filter(repository=repo).values_list("path_hash", flat=True)) - keep
        deleted = _delete_hashes(repo, stale)
    written, deleted_more = _write_files(repo, path, changed)
    _save(state, code_branch=branch, code_commit=tip)
    return written, deleted + deleted_more


def _write_files(repo: Repository, path: Path, files: list[FileEntry]) -> tuple[int, int]:
    cap = max_file_bytes()
    wanted = [entry for entry in files if entry.size is not None and entry.size <= cap]
    # Files grown past the cap since they were indexed leave the index.
    too_big = [entry.path for entry in files if entry.size is None or entry.size > cap]
    deleted = _delete_paths(repo, too_big)
    rows: list[CodeFile] = []
    written = 0
    skipped: list[bytes] = []
    for entry, data in gitread.read_blobs(path, wanted):
        if b"\0" in data:  # binary (git's test looks at 8000 bytes; the database allows no NUL)
            skipped.append(entry.path)
            continue
        rows.append(
            CodeFile(
                repository=repo,
                path_hash=_path_hash(entry.path),
                path=entry.path.decode("utf-8", "replace"),
                path_url=quote(entry.path, safe="/"),
                blob=entry.oid,
                size=len(data),
                content=data.decode("utf-8", "replace"),
            )
        )
        if len(rows) >= ROWS_PER_WRITE:
            written += _upsert(rows)
            rows = []
    written += _upsert(rows)
    deleted += _delete_paths(repo, skipped)
    return written, deleted


def _upsert(rows: list[CodeFile]) -> int:
    if rows:
        CodeFile.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["repository", "path_hash"],
            update_fields=["path", "path_url", "blob", "size", "content"],
        )
    return len(rows)


def _path_hash(path: bytes) -> str:
    return hashlib.sha1(path, usedforsecurity=False).hexdigest()


def _delete_paths(repo: Repository, paths: list[bytes]) -> int:
    return _delete_hashes(repo, {_path_hash(p) for p in paths})


def _delete_hashes(repo: Repository, hashes: set[str]) -> int:
    deleted = 0
    ordered = sorted(hashes)
    for start in range(0, len(ordered), ROWS_PER_WRITE):
        part = ordered[start : start + ROWS_PER_WRITE]
        deleted += CodeFile.objects.filter(repository=repo, path_hash__in=part).delete()[0]
    return deleted


def _index_commits(repo: Repository, state: IndexState, cap: int) -> tuple[int, bool]:
    path = Path(repo.disk_path)
    tips = gitread.branch_tips(path)
    done = list(state.commit_tips)
    gone = gitread.left_behind(path, done, tips)
    if gone:
        for start in range(0, len(gone), ROWS_PER_WRITE):
            part = gone[start : start + ROWS_PER_WRITE]
            CommitEntry.objects.filter(repository=repo, sha__in=part).delete()
        # What is left of `done` is still on a branch (or gone from the repository).
        left = set(gone)
        done = [oid for oid in done if oid not in left]
        _save(state, commit_tips=sorted(done))
    pending = gitread.new_commits(path, tips, done)
    if not pending:
        if sorted(done) != tips:
            _save(state, commit_tips=tips)
        return 0, False
    batch = pending[:cap]
    details = gitread.commit_details(path, batch)
    for start in range(0, len(details), ROWS_PER_WRITE):
        CommitEntry.objects.bulk_create(
            [
                CommitEntry(
                    repository=repo,
                    sha=info.sha,
                    message=info.message,
                    author_name=info.author_name,
                    author_email=info.author_email,
                    committed_at=info.committed_at,
                )
                for info in details[start : start + ROWS_PER_WRITE]
            ],
            ignore_conflicts=True,
        )
    more = len(pending) > cap
    if more:
        # The batch is a prefix of a parents-first list, so it is a whole history: its tips
        # (commits no other commit of the batch has as parent) exclude it next time.
        parents = {parent for info in details for parent in info.parents}
        _save(state, commit_tips=sorted(set(done) | ({info.sha for info in details} - parents)))
    else:
        _save(state, commit_tips=tips)
    return len(details), more


def _save(state: IndexState, **fields) -> None:
    for name, value in fields.items():
        setattr(state, name, value)
    state.save(update_fields=[*fields, "updated_at"])
