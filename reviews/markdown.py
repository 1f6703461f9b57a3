"""A proposal's Markdown (its description and every comment, on the page and in threads):
sanitized as READMEs are (render.rendering), with relative links leading to files on the
proposal's target branch."""

from __future__ import annotations

from render import rendering
from repos.views.browse import url_for


def proposal_markdown(repo, proposal, text: str, *, breaks: bool = False):
    if not text:
        return ""
    branch = proposal.target_branch
    return rendering.render_markdown(
        text,
        directory="",
        blob_base=url_for(repo, "blob", branch),
        raw_base=url_for(repo, "raw", branch),
        breaks=breaks,
    )
