# The default push policy: a write role updates any ref. A pure function, imported by the
# pre-receive hook; standalone (no Django, no project imports; see repos/hooks/__init__.py).
# workspaces installs its ref-namespace policy in its place (repos.extensions), with the
# same decide_all() interface.
from __future__ import annotations

WRITE_ROLES = ("maintainer", "admin")


def decide_all(*, role, pusher, updates, rules=None, is_ancestor=None, workspace_ref_count=None):
    """The reasons for refusing the push (empty list: accept)."""
    if role in WRITE_ROLES:
        return []
    return [f"you need write access to push to {u.ref} (your role: {role or 'none'})" for u in updates]
