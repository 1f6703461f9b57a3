"""The editor's buttons on the browsing pages (templates/repos/blob.html and tree.html): shown
on branches only (tags and commit ids have nothing to commit onto), the blob's Edit button
disabled with the service's reasons when the file cannot be edited in the browser."""

from __future__ import annotations

from django import template

from repos.gittools import rev_parse
from workspaces.webedit import service
from workspaces.webedit.places import page_url

register = template.Library()


def _on_branch(repo, revision) -> bool:
    return rev_parse(repo.disk_path, f"refs/heads/{revision.name}") == revision.sha


@register.simple_tag
def file_editing(repo, revision, path: str) -> dict | None:
    """{"edit", "delete", "reasons"} for a file on a branch, or None."""
    if not _on_branch(repo, revision):
        return None
    editable = service.editable(repo, revision.sha, path)
    reasons = list(editable.reasons) or ([] if editable.blob else ["This file cannot be edited here."])
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
