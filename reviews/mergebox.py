"""The proposal page's merge box: what git says (MergeCheck), what the branch's rules still
ask for, and the strategies on offer."""

from __future__ import annotations


def merge_box_context(request, repo, proposal, latest) -> dict:
    """Context for reviews/_merge_box.html and reviews/_approvals.html."""
    return {}
