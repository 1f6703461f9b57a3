"""Source archives (`git archive`) streamed to the client as .tar.gz, .tar.zst or .zip.

git writes the tar (gzip: its own built-in compressor) and the zip (deflate, with data
descriptors after each file, so it streams through a pipe); zstd compresses the tar as it is read,
chunk by chunk, so no archive is ever held whole. GitProcessResponse reaps git, and kills it if
the client goes away.
"""

from __future__ import annotations

import re
import subprocess

import zstandard

from gitcore.git import popen_git
from gitcore.gitstream import GitProcessResponse

FORMATS = {".tar.gz": "application/gzip", ".tar.zst": "application/zstd", ".zip": "application/zip"}
_GIT_FORMAT = {".tar.gz": "tar.gz", ".tar.zst": "tar", ".zip": "zip"}
ZSTD_LEVEL = 3


def archive_basename(repo_name: str, label: str) -> str:
    """`<name>-<ref>` with anything but [A-Za-z0-9._-] replaced, safe as a file name and in a
    Content-Disposition header."""
    raw = f"{repo_name}-{label}".replace("/", "-")
    return re.sub(r"[^A-Za-z0-9._-]", "_", raw).strip(".") or "archive"


class ZstdGitResponse(GitProcessResponse):
    def _stream(self, prefix: bytes):
        compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compressobj()
        for chunk in super()._stream(prefix):
            out = compressor.compress(chunk)
            if out:
                yield out
        yield compressor.flush()


def archive_response(repo_path, commit: str, basename: str, suffix: str) -> GitProcessResponse:
    proc = popen_git(
        ["archive", f"--format={_GIT_FORMAT[suffix]}", f"--prefix={basename}/", commit],
        repo=repo_path,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    cls = ZstdGitResponse if suffix == ".tar.zst" else GitProcessResponse
    response = cls(proc, content_type=FORMATS[suffix])
    response["Content-Disposition"] = f'attachment; filename="{basename}{suffix}"'
    return response
