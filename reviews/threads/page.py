"""What the proposal page needs of threads: each shown on its line of the diff (Line.after),
the outdated ones beside it."""

from __future__ import annotations


def threads_context(request, repo, proposal, shown, latest, diff) -> dict:
    """Context for reviews/_outdated_threads.html; attaches the threads to `diff`'s lines."""
    return {}
