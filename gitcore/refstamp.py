"""A fingerprint of a repository's refs read from the file system alone: no git process.

git writes every ref file, packed-refs and the reftable list through a lock file renamed into
place, so each write brings a new inode and mtime. Caches of what refs name (the branch and tag
lists, the objects hidden refs reach) are keyed by it, so a warm page starts no process and a
moved ref changes the key at once. A walk of the loose refs is cheap: maintenance packs them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

TOP_FILES = ("packed-refs", "reftable/tables.list", "HEAD")


def refs_fingerprint(gitdir: Path, tops: Sequence[str] = ("refs",)) -> str:
    """Changes whenever a ref under one of `tops` (directories under the git dir) changes."""
    digest = hashlib.sha256()
    for name in TOP_FILES:
        _stat_into(digest, gitdir / name, name)
    for top in tops:
        for root, dirs, files in os.walk(gitdir / top):
            dirs.sort()
            for name in sorted(files):
                path = Path(root) / name
                _stat_into(digest, path, str(path.relative_to(gitdir)))
    return digest.hexdigest()


def _stat_into(digest, path: Path, label: str) -> None:
    try:
        st = path.stat()
    except OSError:
        return
    # A ref's file name may hold any byte but NUL: kept as surrogates by os.walk.
    digest.update(
        f"{label}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_size}\n".encode("utf-8", "surrogateescape")
    )
