"""Relative ages for the Work view ("2 days"), computed against an explicit ``now``.

Taking ``now`` as a parameter keeps every renderer a pure function: tests compare exact
output and a cached rendering states its own reference time.
"""

from __future__ import annotations

_UNITS = (
    (365 * 86400, "year"),
    (30 * 86400, "month"),
    (7 * 86400, "week"),
    (86400, "day"),
    (3600, "hour"),
    (60, "minute"),
)


def describe_age(when: int, now: int) -> str:
    seconds = now - when
    if seconds < 60:
        # Clock skew between committers can put a commit in the future; it is still new.
        return "just now"
    # Weeks start at two: "10 days" says more than "1 week".
    for size, name in _UNITS:
        if seconds >= size and not (name == "week" and seconds < 14 * 86400):
            count = seconds // size
            return f"{count} {name}" + ("" if count == 1 else "s")
    return "just now"  # unreachable: the minute unit matches every age of 60 s and more


def commits(count: int) -> str:
    return f"{count} commit" + ("" if count == 1 else "s")
