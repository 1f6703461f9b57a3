"""The one way a page asks for a diff: the normal view, the whole diff (`?all=1`) or one
file's whole diff (`?file=<path>`, twice for a rename), each with its own caps; highlighted
and cached (repos.diffcache)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import BadRequest
from django.template.loader import render_to_string

from repos.diffcache import highlighted_diff, rendered_diff


def _mode_and_caps(request, caps: dict | None) -> tuple[list[str], str, dict]:
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
    elif caps is None:
        caps = {
            "max_bytes": settings.DIFF_MAX_BYTES,
            "max_files": settings.DIFF_MAX_FILES,
            "max_file_lines": settings.DIFF_MAX_FILE_LINES,
        }
    return paths, mode, caps


def diff_context(request, repo_path, base: str | None, head: str, *, find_copies: bool = False) -> dict:
    """Template context for templates/repos/_diff.html."""
    paths, mode, caps = _mode_and_caps(request, None)
    diff = highlighted_diff(repo_path, base, head, paths=paths, find_copies=find_copies, **caps)
    return {"diff": diff, "diff_url": request.path, "diff_mode": mode}


def rendered_diff_context(
    request, repo_path, base: str | None, head: str, *, caps: dict | None = None
) -> dict:
    """{"diff_html"}: templates/repos/_diff.html rendered, cached by ids (repos.diffcache.
    rendered_diff) for the pages that show a diff and nothing that varies per viewer in it
    (commit, compare). `caps` replace the normal view's (a long compare shows less)."""
    paths, mode, caps = _mode_and_caps(request, caps)

    def render(diff) -> str:
        return render_to_string(
            "repos/_diff.html", {"diff": diff, "diff_url": request.path, "diff_mode": mode}
        )

    html = rendered_diff(render, f"{request.path}\0{mode}", repo_path, base, head, paths=paths, **caps)
    return {"diff_html": html, "diff_url": request.path, "diff_mode": mode}
