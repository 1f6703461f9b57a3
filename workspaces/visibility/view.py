"""The content face of the visibility component: the View of one viewer (repos.visibility's
contract), which every page, the API, the pushlog, search and the git face ask.

An object is hidden from a viewer when only refs hidden from them (workspaces.visibility.rule)
reach it: work that was merged into a branch, or that someone else built on in their own
visible workspace, stays part of that other history. Repositories with nothing moderated never
start git for it: the database says so first.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gitcore.git import GitError, run_git
from gitcore.gittools import is_zero
from repos.visibility import EVERYTHING, View
from workspaces.visibility.closure import closure, excludes
from workspaces.visibility.rule import hidden_prefixes


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
                    *excludes(self.prefixes),
                    "--all",
                ],
                repo=self.gitdir,
                timeout=600,
            ).text.split()
        except GitError:
            return True  # what cannot be walked cannot be shown to be clean
        return not self.hidden.isdisjoint(out)


def view_for(repo, user, role: str | None = None) -> View:
    """What this viewer may see (repos.visibility's contract); `role` when the caller knows it."""
    prefixes = hidden_prefixes(repo, user, role)
    return ModeratedView(repo, prefixes) if prefixes else EVERYTHING
