"""The one way a page asks for a diff: the normal view, the whole diff (`?all=1`) or one
file's whole diff (`?file=<path>`, twice for a rename), each with its own caps; highlighted
and cached (repos.diffcache)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import BadRequest

from repos.diffcache import highlighted_diff


def diff_context(request, repo_path, base: str | None, head: str, *, find_copies: bool = False) -> dict:
    """Template context for templates/repos/_diff.html."""
    paths = request.GET.getlist("file")
    if paths:
        if len(paths) > 2 or any(not p or "\0" in p or len(p) > 4096 for p in paths):
            raise BadRequest("bad file parameter")
        mode = "file"
    else:
        mode = "all" if request.GET.get("all") == "1" else ""
    if mode:
        caps = {
            "max_bytes": settings.DIFF_FULL_MAX_BYTES,
            "max_files": settings.DIFF_FULL_MAX_FILES,
            "max_file_lines": settings.DIFF_FULL_MAX_FILE_LINES,
        }
    else:
        caps = {
            "max_bytes": settings.DIFF_MAX_BYTES,
            "max_files": settings.DIFF_MAX_FILES,
            "max_file_lines": settings.DIFF_MAX_FILE_LINES,
        }
    diff = highlighted_diff(repo_path, base, head, paths=paths, find_copies=find_copies, **caps)
    return {"diff": diff, "diff_url": request.path, "diff_mode": mode}
