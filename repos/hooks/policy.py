# The push policy: a pure function, table-tested, imported by the pre-receive hook.
# Standalone: no Django, no project imports (see repos/hooks/__init__.py). The workspaces
# issue replaces this function with the full ref-namespace policy.
from __future__ import annotations

ZERO_OID = "0" * 40
ROLES = ("reader", "maintainer", "admin")
WRITE_ROLES = ("maintainer", "admin")


def decide(*, role: str, pusher: str, ref: str, old: str, new: str) -> str | None:
    """None to allow this ref update, or the reason it is refused (shown as a remote: line)."""
    if role not in WRITE_ROLES:
        return f"you need write access to push to {ref} (your role: {role or 'none'})"
    return None
