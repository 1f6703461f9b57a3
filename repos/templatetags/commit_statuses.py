"""`{% commit_statuses repo sha %}`: a commit's combined status as a compact badge that opens
onto the list of its contexts (state, context, description, and a "Details" link).

Everything is autoescaped by the template; `target_url` becomes a link only when it is an
absolute http(s) URL, checked again here with the service's own rule, so a row stored before
that rule (or written past it) cannot put `javascript:` into a page. Pages that show many
commits load their statuses in one query (repos.statuses.combined_many) and pass the result:
`{% commit_statuses repo sha combined %}`.
"""

from __future__ import annotations

from collections import Counter

from django import template

from repos import statuses
from repos.errors import InvalidInput
from repos.models import StatusState

register = template.Library()


def status_link(url: str) -> str | None:
    """The URL if a page may link it (absolute http or https), else None."""
    try:
        return statuses.clean_target_url(url) or None
    except InvalidInput:
        return None


def summary(combined: statuses.Combined) -> str:
    counts = Counter(
        StatusState.FAILURE if s.state == StatusState.ERROR else StatusState(s.state)
        for s in combined.statuses
    )
    total = combined.total_count
    checks = f"{total} check{'s' if total != 1 else ''}"
    if counts[StatusState.FAILURE]:
        return f"{counts[StatusState.FAILURE]} of {checks} failing"
    if counts[StatusState.PENDING]:
        return f"{counts[StatusState.PENDING]} of {checks} pending"
    return f"{checks} passed" if total != 1 else "1 check passed"


@register.inclusion_tag("repos/_commit_statuses.html")
def commit_statuses(repo, sha, combined=None):
    if combined is None and repo is not None and sha:
        combined = statuses.combined(repo, sha)
    if not combined or not combined.statuses:
        return {"combined": None}
    rows = [
        {
            "state": s.state,
            "symbol": statuses.STATE_SYMBOLS.get(s.state, ""),
            "context": s.context,
            "description": s.description,
            "link": status_link(s.target_url),
        }
        for s in combined.statuses
    ]
    return {
        "combined": combined,
        "state": combined.state,
        "symbol": statuses.STATE_SYMBOLS.get(combined.state, ""),
        "summary": summary(combined),
        "rows": rows,
    }
