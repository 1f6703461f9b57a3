"""The objects only hidden refs reach (the "closure"), computed once per state of the refs.

One `git rev-list --objects <tips under hidden refs> --not --exclude=<hidden prefixes> --all`
walks the hidden content only, stopping wherever visible history begins, so work merged into a
branch or built on in a visible workspace stays out of it. The result is cached in the
repository directory (`hostsite-hidden-<key>`), keyed by the hidden prefixes and by a
fingerprint of the ref store (gitcore.refstamp): git writes every ref through a lock file renamed
into place, so any ref change gives a new fingerprint and the closure is computed again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from gitcore.git import run_git
from gitcore.gittools import list_refs
from gitcore.refstamp import refs_fingerprint

CACHE_PREFIX = "hostsite-hidden-"
# Parsed closures kept per process: pages ask several times per request.
_MEMORY: dict[tuple[str, str], frozenset[str]] = {}
_MEMORY_MAX = 64


def excludes(prefixes: Iterable[str]) -> list[str]:
    return [f"--exclude={prefix}*" for prefix in prefixes]


def cache_path(gitdir: Path, prefixes: tuple[str, ...]) -> Path:
    key = hashlib.sha256("\n".join(prefixes).encode()).hexdigest()[:16]
    return gitdir / f"{CACHE_PREFIX}{key}"


def closure(gitdir: Path, prefixes: tuple[str, ...]) -> frozenset[str]:
    """Every object (commits, trees, blobs, tags) that only refs under `prefixes` reach."""
    fingerprint = refs_fingerprint(gitdir)
    path = cache_path(gitdir, prefixes)
    remembered = _MEMORY.get((str(path), fingerprint))
    if remembered is not None:
        return remembered
    found = _read_cache(path, fingerprint)
    if found is None:
        found = _compute(gitdir, prefixes)
        _write_cache(path, fingerprint, found)
    if len(_MEMORY) >= _MEMORY_MAX:
        _MEMORY.clear()
    _MEMORY[(str(path), fingerprint)] = found
    return found


def _compute(gitdir: Path, prefixes: tuple[str, ...]) -> frozenset[str]:
    listed = [entry.oid for entry in list_refs(gitdir, *prefixes)]
    if not listed:
        return frozenset()
    out = run_git(
        [
            "rev-list",
            "--objects",
            "--no-object-names",
            *sorted(set(listed)),
            "--not",
            *excludes(prefixes),
            "--all",
        ],
        repo=gitdir,
        timeout=600,
    ).text.split()
    return frozenset(out)


def _read_cache(path: Path, fingerprint: str) -> frozenset[str] | None:
    try:
        with path.open(encoding="ascii") as fh:
            if fh.readline().strip() != fingerprint:
                return None
            return frozenset(line.strip() for line in fh if line.strip())
    except (OSError, UnicodeDecodeError):
        return None


def _write_cache(path: Path, fingerprint: str, oids: frozenset[str]) -> None:
    # Several web workers may read the same file: written whole, then
    # renamed, so no reader sees half of it.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(fingerprint + "\n" + "".join(f"{oid}\n" for oid in sorted(oids)), encoding="ascii")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
