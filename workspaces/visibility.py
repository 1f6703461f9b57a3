"""The moderation side of the access rule (repos.visibility): what taken-down and hidden
workspaces take out of a repository for one viewer.

- Taken down: refs/takedown/<u>/ (where the take-down moved the refs) and refs/archive/<u>/
  are hidden from everyone but staff, the owner included.
- Hidden: refs/users/<u>/ and refs/archive/<u>/ are hidden from everyone but the owner, the
  repository's admins and staff.

An object is hidden from a viewer when only refs hidden from them reach it: work that was
merged into a branch, or that someone else built on in their own visible workspace, stays
part of that other history. That set (the "closure") is what a fetch by id, a page by id and
a push may not reach. It is computed by one rev-list over the hidden content only (`--not`
every other ref) and cached per repository, keyed by the hidden prefixes and by the state of
the ref store, so it is recomputed only after refs change. Repositories with nothing
moderated never start git for it: the database says so first.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from repos.git import GitError, run_git
from repos.gittools import is_zero, list_refs
from repos.models import Role
from repos.refstamp import refs_fingerprint
from repos.selectors import role_for
from repos.visibility import EVERYTHING, View
from workspaces import selectors

TAKEDOWN = "refs/takedown/"
ARCHIVE = "refs/archive/"
CACHE_PREFIX = "hostsite-hidden-"
# Parsed closures kept per process: pages ask several times per request.
_MEMORY: dict[tuple[str, str], frozenset[str]] = {}
_MEMORY_MAX = 64


def _is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def hidden_prefixes(repo, user, role: str | None = None) -> tuple[str, ...]:
    """The ref prefixes whose content this viewer may not see; () for a view of everything.
    `role` is the viewer's role label when the caller knows it already (a push does)."""
    if _is_staff(user):
        return ()
    taken_down = selectors.taken_down_usernames(repo)
    hidden = selectors.hidden_usernames(repo)
    if not taken_down and not hidden:
        return ()
    own = user.username if user is not None and user.is_authenticated else None
    if hidden and (role == "admin" if role is not None else role_for(user, repo) == Role.ADMIN):
        hidden = []
    prefixes: set[str] = set()
    if taken_down:
        prefixes.add(TAKEDOWN)
    for name in taken_down:
        prefixes.update((f"refs/users/{name}/", f"{ARCHIVE}{name}/"))
    for name in hidden:
        if name != own:
            prefixes.update((f"refs/users/{name}/", f"{ARCHIVE}{name}/"))
    return tuple(sorted(prefixes))


def _excludes(prefixes: Iterable[str]) -> list[str]:
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
            *_excludes(prefixes),
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


class ModeratedView(View):
    """The view of one viewer in a repository with taken-down or hidden workspaces."""

    restricts = True

    def __init__(self, repo, prefixes: tuple[str, ...]):
        self.gitdir = Path(repo.disk_path)
        self.prefixes = prefixes
        self._closure: frozenset[str] | None = None
        self._users = frozenset(p.split("/")[2] for p in prefixes if p.count("/") >= 3)

    @property
    def hidden(self) -> frozenset[str]:
        if self._closure is None:
            self._closure = closure(self.gitdir, self.prefixes)
        return self._closure

    def ref_visible(self, ref: str) -> bool:
        return not ref.startswith(self.prefixes)

    def username_visible(self, username: str) -> bool:
        return username not in self._users

    def object_visible(self, oid: str) -> bool:
        return oid not in self.hidden

    def hidden_objects(self, oids: Iterable[str]) -> set[str]:
        return set(oids) & self.hidden

    def hidden_ref_prefixes(self) -> tuple[str, ...]:
        return self.prefixes

    def hidden_set(self) -> frozenset[str]:
        return self.hidden

    def reaches_hidden(self, tips: Iterable[str]) -> bool:
        tips = sorted({tip for tip in tips if tip and not is_zero(tip)})
        if not tips or not self.hidden:
            return False
        try:
            out = run_git(
                [
                    "rev-list",
                    "--objects",
                    "--no-object-names",
                    *tips,
                    "--not",
                    *_excludes(self.prefixes),
                    "--all",
                ],
                repo=self.gitdir,
                timeout=600,
            ).text.split()
        except GitError:
            return True  # what cannot be walked cannot be shown to be clean
        return not self.hidden.isdisjoint(out)


def view_for(repo, user) -> View:
    prefixes = hidden_prefixes(repo, user)
    return ModeratedView(repo, prefixes) if prefixes else EVERYTHING


def hook_environment(repo, user, role: str, commands) -> dict[str, str]:
    """What the pre-receive hook needs to refuse a push that re-publishes hidden content: the
    hidden prefixes, from the database alone (repos/hooks/pre_receive.py walks the rest)."""
    if not any(not is_zero(new) for _old, new, _ref in commands):
        return {}
    prefixes = hidden_prefixes(repo, user, role)
    return {"HOSTSITE_HIDDEN_PREFIXES": " ".join(prefixes)} if prefixes else {}
