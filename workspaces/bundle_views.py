"""`/<owner>/<name>/workspaces/<user>.bundle`: one user's workspace refs as a git bundle, for
people who cannot fetch over git (`git fetch bob.bundle 'refs/users/bob/*:refs/remotes/bob/*'`).

The same access rule as the workspace's page: a repository the viewer may not read answers 404,
and so does a hidden or taken-down workspace, with the very answer an empty or unknown one
gets, so neither tells. git writes the bundle to the response as it goes; nothing holds it."""

from __future__ import annotations

import subprocess

from django.core.exceptions import ValidationError
from django.http import HttpResponseNotFound
from django.http.response import HttpResponseBase

from gitcore.git import popen_git
from gitcore.gitstream import GitProcessResponse
from gitcore.gittools import list_refs
from repos.hooks import refspace
from repos.names import validate_username
from repos.views import repo_or_404
from workspaces import selectors

NOTHING = "No workspace refs to bundle: this workspace is empty, or there is no such workspace.\n"


def _valid_username(username: str) -> bool:
    # Also keeps for-each-ref glob characters out of the ref pattern below.
    try:
        validate_username(username)
    except ValidationError:
        return False
    return True


def workspace_bundle(request, owner: str, name: str, username: str) -> HttpResponseBase:
    repo = repo_or_404(request, owner, name)
    refs = []
    if _valid_username(username) and selectors.visible_to(request.user, repo, username):
        refs = [entry.name for entry in list_refs(repo.disk_path, refspace.workspace_prefix(username))]
    if not refs:
        return HttpResponseNotFound(NOTHING, content_type="text/plain; charset=utf-8")
    proc = popen_git(
        ["bundle", "create", "--quiet", "-", "--stdin"],
        repo=repo.disk_path,
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    # git reads every revision before it writes a byte, so this cannot deadlock on a full pipe.
    # Names come from for-each-ref as bytes (surrogateescape), and go back the same way.
    try:
        proc.stdin.write("".join(f"{ref}\n" for ref in refs).encode("utf-8", "surrogateescape"))  # type: ignore[union-attr]
        proc.stdin.close()  # type: ignore[union-attr]
    except BrokenPipeError:
        pass  # git died (a ref went away meanwhile): the response ends short, as a dropped one would
    response = GitProcessResponse(proc, content_type="application/x-git-bundle")
    response["Content-Disposition"] = f'attachment; filename="{repo.name}-{username}.bundle"'
    return response
