"""The CODEOWNERS notice on the branch pages (templates/repos/tree.html at a branch's root and
the repository page): the problems reviews.codeowners found in the branch's file, by line.

A template tag because repos may not import reviews: the templates are the top layer, and
this is how repos' pages show what an app above contributes (as workspaces' webedit tags do).
Reading it costs a few cat-file questions (no process), on a branch's root listing only; any failure shows nothing
rather than breaking the page."""

from __future__ import annotations

import logging

from django import template

from gitcore import catfile
from gitcore.git import GitError
from reviews import codeowners

register = template.Library()
log = logging.getLogger(__name__)


@register.inclusion_tag("reviews/_codeowners_notice.html")
def codeowners_notice(repo, revision, path: str = "") -> dict:
    if path or revision is None:
        return {}
    try:
        if catfile.resolve(repo.disk_path, f"refs/heads/{revision.name}") != revision.sha:
            return {}  # a tag or a commit: owners are read from branches only
        owners = codeowners.read(repo.disk_path, revision.sha)
        problems = owners.problems + codeowners.approval_problems(repo, owners)
    except GitError as exc:
        log.warning("CODEOWNERS of %s at %s unreadable: %s", repo.pk, revision.name, exc)
        return {}
    return {"owners_path": owners.path, "problems": problems[:100], "more": max(0, len(problems) - 100)}
