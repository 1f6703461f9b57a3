"""One `git diff` for the web pages, read up to a byte cap and parsed by render.diffs.

Output is read from git in chunks and git is stopped once the byte cap is reached, so a huge
diff costs at most `max_bytes` of memory, never the whole patch. The caps default to
DIFF_MAX_BYTES, DIFF_MAX_FILES and DIFF_MAX_FILE_LINES (hostsite/browse_settings.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings

from gitcore.git import run_git, stream_git
from render.diffs import Diff, parse

READ_CHUNK = 64 * 1024


def empty_tree(repo_path: Path | str) -> str:
    """The empty tree's id in this repository's hash (sha1 or sha256)."""
    return run_git(["hash-object", "-t", "tree", "--stdin"], repo=repo_path, input=b"").text.strip()


def diff(
    repo_path: Path | str,
    base: str | None,
    head: str,
    *,
    max_bytes: int | None = None,
    max_files: int | None = None,
    max_file_lines: int | None = None,
    find_copies: bool = False,
    paths: Sequence[str] = (),
) -> Diff:
    """The changes from `base` to `head` (commits or trees; base None = the empty tree).

    Stops reading after max_bytes of patch and max_files files, and keeps at most
    max_file_lines lines a file (still counting the rest). `paths` limits the diff to those
    literal paths (give both sides of a rename so git still pairs them)."""
    max_bytes = settings.DIFF_MAX_BYTES if max_bytes is None else max_bytes
    max_files = settings.DIFF_MAX_FILES if max_files is None else max_files
    max_file_lines = settings.DIFF_MAX_FILE_LINES if max_file_lines is None else max_file_lines
    left = base if base else empty_tree(repo_path)
    args = [
        "-c",
        "core.quotePath=false",
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "-M",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--patch",
    ]
    if find_copies:
        args.append("--find-copies")
    args += [left, head, "--", *paths]
    raw, cut = _read_limited(repo_path, args, max_bytes)
    files, too_many = parse(raw, max_files, max_file_lines, cut)
    reason = "files" if too_many else ("bytes" if cut else "")
    return Diff(
        base,
        head,
        files,
        truncated=bool(reason),
        reason=reason,
        max_bytes=max_bytes,
        max_files=max_files,
        left=left,
    )


def _read_limited(repo_path, args: list[str], max_bytes: int) -> tuple[bytes, bool]:
    """git's stdout up to max_bytes; (output, True) if there was more (git is then stopped)."""
    # stderr goes to a file: a pipe nobody reads while stdout is read could fill and stall git.
    env = {"GIT_LITERAL_PATHSPECS": "1"}
    with tempfile.TemporaryFile() as err, stream_git(args, repo=repo_path, stderr=err, env=env) as git:
        chunks, size, cut = [], 0, False
        while True:
            chunk = git.stdout.read1(READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                cut = True  # leaving the block stops git
                break
        if not cut:
            git.wait()
            err.seek(0)
            git.check(err.read(4000))
    raw = b"".join(chunks)
    if cut:
        raw = raw[:max_bytes]
        raw = raw[: raw.rfind(b"\n") + 1]  # a partial last line is dropped, not shown cut
    return raw, cut
