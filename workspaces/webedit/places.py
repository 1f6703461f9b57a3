"""Where an editor page is: the `<ref>/<path>` of its URL as the ref an edit is based on, the
commit the page shows and the path in it, and where the viewer may commit from there.

A page is based on a branch (`main/docs/intro.md`) or on a workspace ref
(`refs/users/alice/fix/docs/intro.md`: proposals' files are edited in place). Tags and
commit ids are not: there is nothing there to add a commit to. Anything the viewer may not
see (a hidden or taken-down workspace, an unknown ref) is None, answered as a missing ref."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from django.urls import reverse

from gitcore.git import is_valid_refname
from gitcore.gittools import ref_map, rev_parse
from repos import browse
from repos.hooks import refspace
from repos.models import Role
from repos.selectors import role_for
from repos.visibility import view_for
from workspaces import selectors

WORKSPACES = refspace.WORKSPACES


@dataclass(frozen=True)
class Place:
    base_ref: str  # a branch name, or a full workspace ref
    commit: str  # the commit the page shows: the edit applies on it
    path: str  # a path in its tree ("" for the root directory)
    branch: str | None = None  # base_ref, when it is a branch
    ref_owner: str | None = None  # the workspace's owner, when base_ref is a workspace ref

    @property
    def directory(self) -> str:
        return self.path.rpartition("/")[0]


def locate(repo, user, spec: str) -> Place | None:
    spec = spec.removesuffix("/")
    view = view_for(repo, user)
    if spec.startswith(WORKSPACES):
        return _in_workspace(repo, user, spec)
    revision = browse.split_revision(repo.disk_path, spec, view)
    if revision is None or rev_parse(repo.disk_path, f"refs/heads/{revision.name}") != revision.sha:
        return None
    path = browse.clean_path(revision.path)
    return None if path is None else Place(revision.name, revision.sha, path, branch=revision.name)


def _in_workspace(repo, user, spec: str) -> Place | None:
    parts = spec.split("/")
    username = parts[2] if len(parts) > 3 else ""
    prefix = f"{WORKSPACES}{username}/"
    if not username or not is_valid_refname(prefix + "x") or not selectors.visible_to(user, repo, username):
        return None
    view = view_for(repo, user)
    refs = ref_map(repo.disk_path, prefix)
    # The longest leading part that names a ref wins, as for branches with slashes.
    for cut in range(len(parts), 3, -1):
        ref = "/".join(parts[:cut])
        if ref in refs and view.ref_visible(ref):
            commit = rev_parse(repo.disk_path, refs[ref])
            path = browse.clean_path("/".join(parts[cut:]))
            if commit is None or path is None or not view.object_visible(commit):
                return None
            return Place(ref, commit, path, ref_owner=username)
    return None


def may_write_ref(repo, user, place: Place) -> bool:
    """Whether the viewer may add a commit to the workspace ref the page is on: their own, or
    someone else's when they may edit other workspaces (admins; maintainers while the setting
    is on). The service judges again, with the push policy."""
    if place.ref_owner is None or not user.is_authenticated:
        return False
    if place.ref_owner == user.username:
        return True
    role = role_for(user, repo)
    return role is not None and selectors.may_edit_others(role.label, repo)


def targets(repo, user, place: Place) -> list[tuple[str, str]]:
    """The choices of where a commit goes, in the order the page offers them."""
    choices = []
    role = role_for(user, repo)
    if place.branch is not None and role is not None and role >= Role.MAINTAINER:
        choices.append(("branch", f"Commit directly to {place.branch}"))
    if may_write_ref(repo, user, place):
        choices.append(("ref", f"Commit to {place.base_ref} (a new revision of its proposal)"))
    choices.append(("workspace", "Commit to my workspace, as a ref named:"))
    return choices


def default_target(choices: list[tuple[str, str]]) -> str:
    """A proposal's own ref when it is offered (editing a proposal in place), else a workspace
    ref: a contribution ends in a proposal, and a maintainer picks the branch deliberately."""
    values = [value for value, _label in choices]
    return "ref" if "ref" in values else "workspace"


def page_url(repo, kind: str, place_ref: str, path: str = "") -> str:
    """The URL of an editor page (kind: edit, new, upload, delete) at a ref and path."""
    base = reverse("webedit-" + kind, kwargs={"owner": repo.owner.username, "name": repo.name, "spec": "x"})
    spec = quote(place_ref) + ("/" + quote(path.encode("utf-8", "surrogateescape")) if path else "")
    return base[: -len("x")] + spec


def proposal_edit_links(repo, user, number: int, source_ref: str, files) -> list[tuple[str, str]]:
    """(path, editor URL) for each file a proposal's revision changes and still has, when the
    viewer may commit to its ref (its author; maintainers while they may edit workspaces;
    admins): the commit lands on that ref, a new revision as if pushed. `files` are
    render.diffs.FileDiff; binary files are replaced by upload, not edited."""
    owner = (
        source_ref.removeprefix(WORKSPACES).split("/", 1)[0] if source_ref.startswith(WORKSPACES) else None
    )
    if owner is None or not may_write_ref(repo, user, Place(source_ref, "", "", ref_owner=owner)):
        return []
    return [
        (f.path, f"{page_url(repo, 'edit', source_ref, f.path)}?proposal={number}")
        for f in files
        if f.new_path is not None and not f.binary and f.new_mode != "120000"
    ]
