"""What the index reads from git: a tree's files, the files changed between two commits, blobs
in batches, and commits not indexed yet. Every process goes through gitcore.git."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from gitcore.git import run_git

# Blobs read per `cat-file --batch` process: the output is held in memory, so chunks stay
# well under this many bytes (each blob is capped by the caller).
BATCH_BYTES = 32 * 1024 * 1024
BLOB_MODES = ("100644", "100755")


@dataclass(frozen=True)
class FileEntry:
    path: bytes
    oid: str
    size: int | None = None


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author_name: str
    author_email: str
    committed_at: datetime
    message: str


def tree_files(repo: Path, commit: str) -> list[FileEntry]:
    """Every regular file of the commit's tree (no symlinks, no submodules), with its size."""
    out = run_git(["ls-tree", "-r", "-z", "-l", "--full-tree", commit], repo=repo, timeout=600).stdout
    files = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid, size = meta.split()
        if kind == b"blob" and mode.decode() in BLOB_MODES:
            files.append(FileEntry(path, oid.decode(), int(size)))
    return files


def changed_files(repo: Path, old: str, new: str) -> tuple[list[FileEntry], list[bytes]]:
    """(files added or changed, paths gone) from `old` to `new`. A file that became a symlink
    or a submodule is gone, as far as code search is concerned."""
    out = run_git(
        ["diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-commit-id", old, new], repo=repo, timeout=600
    ).stdout
    fields = out.split(b"\0")
    changed: list[FileEntry] = []
    gone: list[bytes] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        _src_mode, dst_mode, _src, dst, status = meta[1:].decode().split()
        if status == "D" or dst_mode not in BLOB_MODES:
            gone.append(path)
        else:
            changed.append(FileEntry(path, dst))
    return changed, gone


def object_sizes(repo: Path, oids: Iterable[str]) -> dict[str, int]:
    wanted = "".join(f"{oid}\n" for oid in oids)
    if not wanted:
        return {}
    out = run_git(
        ["cat-file", "--batch-check=%(objectname) %(objectsize)"],
        repo=repo,
        input=wanted.encode(),
        timeout=600,
    ).text
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def read_blobs(repo: Path, files: list[FileEntry]) -> Iterator[tuple[FileEntry, bytes]]:
    """Each file with its blob's bytes, read by `cat-file --batch` in chunks. Sizes must be
    known (and capped) by the caller."""
    chunk: list[FileEntry] = []
    total = 0
    for entry in files:
        chunk.append(entry)
        total += entry.size or 0
        if total >= BATCH_BYTES or len(chunk) >= 2000:
            yield from _batch(repo, chunk)
            chunk, total = [], 0
    if chunk:
        yield from _batch(repo, chunk)


def _batch(repo: Path, files: list[FileEntry]) -> Iterator[tuple[FileEntry, bytes]]:
    wanted = "".join(f"{entry.oid}\n" for entry in files).encode()
    out = run_git(["cat-file", "--batch"], repo=repo, input=wanted, timeout=600).stdout
    pos = 0
    for entry in files:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3:  # "<oid> missing"
            continue
        size = int(header[2])
        yield entry, out[pos : pos + size]
        pos += size + 1


def branch_tips(repo: Path) -> list[str]:
    out = run_git(["for-each-ref", "--format=%(objectname)", "refs/heads/"], repo=repo).text
    return sorted(set(out.split()))


def new_commits(repo: Path, tips: list[str], done: list[str]) -> list[str]:
    """Commits reachable from `tips` and not from `done`, parents before children (so any
    prefix of the list is a whole history that a next run can exclude by its tips)."""
    if not tips:
        return []
    # --ignore-missing: a `done` commit may have been pruned since (a deleted branch).
    args = ["rev-list", "--topo-order", "--reverse", "--ignore-missing", "--stdin"]
    wanted = "".join(f"{tip}\n" for tip in tips) + "".join(f"^{oid}\n" for oid in done)
    return run_git(args, repo=repo, input=wanted.encode(), timeout=600).text.split()


def left_behind(repo: Path, done: list[str], tips: list[str]) -> list[str]:
    """Commits reachable from `done` (what was indexed) and from none of `tips` (the branches
    now): what a force-push or a deleted branch took off the branches."""
    if not done:
        return []
    wanted = "".join(f"{oid}\n" for oid in done) + "".join(f"^{tip}\n" for tip in tips)
    args = ["rev-list", "--ignore-missing", "--stdin"]
    return run_git(args, repo=repo, input=wanted.encode(), timeout=600).text.split()


def commit_details(repo: Path, shas: list[str]) -> list[CommitInfo]:
    if not shas:
        return []
    out = run_git(
        ["log", "--no-walk=unsorted", "--stdin", "-z", "--format=%H%n%P%n%an%n%ae%n%ct%n%B"],
        repo=repo,
        input="".join(f"{sha}\n" for sha in shas).encode(),
        timeout=600,
    ).stdout
    commits = []
    for record in out.split(b"\0"):
        if not record.strip():
            continue
        sha, parents, name, email, when, message = record.decode("utf-8", "replace").split("\n", 5)
        commits.append(
            CommitInfo(
                sha=sha,
                parents=tuple(parents.split()),
                author_name=name[:255],
                author_email=email[:255],
                committed_at=datetime.fromtimestamp(int(when or 0), tz=UTC),
                message=message.strip(),
            )
        )
    return commits
