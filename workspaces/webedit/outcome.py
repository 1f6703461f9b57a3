"""What the editor's pages show after a commit or a refusal: where the commit landed, and for
a stale edit what changed since the page was loaded."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django.urls import reverse

from gitcore.gittools import is_ancestor, rev_parse
from repos import browse
from workspaces.webedit.places import WORKSPACES, Place

DIFF_MAX_LINES = 2000
DONE_KEY = "webedit_done"  # the session's record of the last commit, per repository


@dataclass(frozen=True)
class Change:
    """Between the blob the page showed and the one the ref holds now."""

    now_blob: str | None  # None: the file is gone
    diff: str  # unified diff of the two texts ("" when either is binary)
    binary: bool = False
    truncated: bool = False


def full_target_ref(place: Place, target: str, name: str, username: str) -> str:
    """The ref the commit was to land on, if the page may show it: the branch, the workspace
    ref the page is on, or one of the editor's own; else the page's ref. Never a ref typed
    into the name field that names someone else's workspace."""
    if target == "branch" and place.branch:
        return f"refs/heads/{place.branch}"
    if name == place.base_ref or not name:
        return _base_ref(place)
    own = f"{WORKSPACES}{username}/"
    if name.startswith(own) or not name.startswith("refs/"):
        return own + name.removeprefix(own)
    return _base_ref(place)


def _base_ref(place: Place) -> str:
    return f"refs/heads/{place.branch}" if place.branch else place.base_ref


def what_changed(
    repo, place: Place, target_ref: str, path: str, base_commit: str, expected_blob: str | None
) -> Change:
    """The file at the target ref's tip now (else at the page's ref's), against what the page
    showed. The ids come from the form: the loaded side is shown only when `base_commit` is in
    the history of that tip and holds `expected_blob` at `path`, so no id posted by hand can
    make the page show an object the viewer could not see."""
    tip = rev_parse(repo.disk_path, target_ref) or rev_parse(repo.disk_path, _base_ref(place))
    if tip is None:
        return Change(None, "")
    entry = browse.entry_at(repo.disk_path, tip, path)
    now = entry.sha if entry is not None and entry.kind == "blob" else None
    loaded = None
    if expected_blob and is_ancestor(repo.disk_path, base_commit, tip):
        then = browse.entry_at(repo.disk_path, base_commit, path)
        loaded = expected_blob if then is not None and then.sha == expected_blob else None
    if loaded is None and expected_blob:
        return Change(now, "")  # what was loaded cannot be shown: only that it changed
    old_data = browse.read_blob(repo.disk_path, loaded) if loaded else b""
    new_data = browse.read_blob(repo.disk_path, now) if now else b""
    if browse.is_binary(old_data) or browse.is_binary(new_data):
        return Change(now, "", binary=True)
    lines = list(
        difflib.unified_diff(
            old_data.decode("utf-8", "replace").splitlines(keepends=True),
            new_data.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile="the version you loaded",
            tofile="the version there now",
        )
    )
    shown = "".join(line if line.endswith("\n") else line + "\n" for line in lines[:DIFF_MAX_LINES])
    return Change(now, shown, truncated=len(lines) > DIFF_MAX_LINES)


def remember(request, repo, result, message: str, *, proposal: int | None = None) -> None:
    """Kept in the session for the result page (post/redirect/get), one per repository.
    `proposal`: the number of the proposal whose file was edited in place."""
    done = dict(request.session.get(DONE_KEY) or {})
    done[str(repo.pk)] = {
        "ref": result.ref,
        "commit": result.commit,
        "created": result.created,
        "proposal_url": result.proposal_url,
        "proposal": proposal,
        "mine": result.ref.startswith(f"{WORKSPACES}{request.user.username}/"),
        "subject": message.strip().splitlines()[0] if message.strip() else "",
    }
    request.session[DONE_KEY] = done


def recalled(request, repo) -> dict | None:
    found = (request.session.get(DONE_KEY) or {}).get(str(repo.pk))
    if not found:
        return None
    ref = found["ref"]
    if ref.startswith(WORKSPACES) and ref.count("/") >= 3:
        username, refname = ref.removeprefix(WORKSPACES).split("/", 1)
        found["ref_url"] = reverse(
            "workspace-ref",
            kwargs={
                "owner": repo.owner.username,
                "name": repo.name,
                "username": username,
                "refname": refname,
            },
        )
    found["commit_url"] = reverse(
        "repo-commit", kwargs={"owner": repo.owner.username, "name": repo.name, "sha": found["commit"]}
    )
    return found
