"""The editor's buttons on the browsing pages (templates/repos/blob.html and tree.html): shown
on branches only (tags and commit ids have nothing to commit onto), the blob's Edit button
disabled with the service's reasons when the file cannot be edited in the browser."""

from __future__ import annotations

from django import template
from django.conf import settings

from gitcore import catfile
from workspaces.webedit import files
from workspaces.webedit.places import page_url

register = template.Library()


def _on_branch(repo, revision) -> bool:
    return catfile.resolve(repo.disk_path, f"refs/heads/{revision.name}") == revision.sha


@register.simple_tag
def file_editing(repo, revision, path: str, size, is_link: bool, binary: bool) -> dict | None:
    """{"edit", "delete", "reasons"} for a file on a branch, or None. The reasons come from what
    the blob page read already (size, kind, git's binary test): browsing a file starts no git
    process for the button; the editor's page judges the file fully (encoding, stray CRs)."""
    if not _on_branch(repo, revision):
        return None
    limit = settings.WEB_EDIT_MAX_BYTES
    if is_link:
        reasons = [files.not_a_file("120000")]
    elif (size or 0) > limit:
        reasons = [files.too_large(limit)]
    elif binary:
        reasons = [files.BINARY]
    else:
        reasons = []
    return {
        "edit": page_url(repo, "edit", revision.name, path),
        "delete": page_url(repo, "delete", revision.name, path),
        "reasons": reasons,
    }


@register.simple_tag
def directory_editing(repo, revision, path: str) -> dict | None:
    """{"add", "upload"} for a directory on a branch, or None."""
    if not _on_branch(repo, revision):
        return None
    return {
        "add": page_url(repo, "new", revision.name, path),
        "upload": page_url(repo, "upload", revision.name, path),
    }
