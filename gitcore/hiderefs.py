"""git's reading of `hideRefs` values and of a short ref name, for checks made in git's place.

A check that reads a hideRefs list or a ref name differently from git is a hole: these
functions follow git's own rules (refs.c `ref_is_hidden` and `ref_rev_parse_rules`), so a name
the request's hideRefs hide is hidden here exactly when git would hide it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

HIDE_KEYS = frozenset({"uploadpack.hiderefs", "receive.hiderefs", "transfer.hiderefs"})
# How git expands a short name into full ref names, in its order (refs.c).
_DWIM_RULES = ("{}", "refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")


def is_hidden(ref: str, values: Sequence[str]) -> bool:
    """Whether hideRefs `values` hide `ref`: the last value that matches decides, and "!"
    exposes (a value matches the ref itself or anything below it)."""
    for value in reversed(values):
        negated = value.startswith("!")
        prefix = (value[1:] if negated else value).rstrip("/")
        if ref == prefix or ref.startswith(prefix + "/"):
            return not negated
    return False


def values_for(service: str, config: Iterable[tuple[str, str]]) -> list[str]:
    """The hideRefs values a `git -c` list gives `upload-pack` or `receive-pack`, in order."""
    keys = {"transfer.hiderefs", f"{'uploadpack' if service == 'upload-pack' else 'receive'}.hiderefs"}
    return [value for key, value in config if key.lower() in keys]


def expansions(name: str) -> list[str]:
    """Every full ref name git may read a short name as (`deepen-not main`, say)."""
    return [rule.format(name) for rule in _DWIM_RULES]


def names_hidden(name: str, values: Sequence[str]) -> bool:
    """Whether any ref git could read `name` as is hidden: refused whether or not it exists,
    so the answer says nothing about what is there."""
    return any(is_hidden(ref, values) for ref in expansions(name))
