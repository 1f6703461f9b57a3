# The default push policy: a write role updates any ref. A pure function, imported by the
# pre-receive hook; standalone (no Django, no project imports; see repos/hooks/__init__.py).
# A git access backend may name another policy (repos.gitaccess: workspaces names its
# ref-namespace policy); every policy has the same entry point, rules_from_env(env) then
# decide_all(...), which the hook and the web process's writes (repos.gitaccess.policy) call.
from __future__ import annotations

try:  # installed beside the hooks, with updates.py and refnames.py (repos.storage.install_hooks)
    from refnames import INVISIBLE, invisible_reason, shown
    from updates import is_zero
except ImportError:  # imported as part of the project (the web process, tests)
    from repos.hooks.refnames import INVISIBLE, invisible_reason, shown
    from repos.hooks.updates import is_zero

__all__ = ["INVISIBLE", "decide_all", "invisible_reason", "rules_from_env", "shown"]

WRITE_ROLES = ("maintainer", "admin")


def rules_from_env(env) -> None:
    """This policy has no rules beyond the role."""
    return None


def decide_all(*, role, pusher, updates, rules=None, is_ancestor=None, workspace_ref_count=None):
    """The reasons for refusing the push (empty list: accept)."""
    if role not in WRITE_ROLES:
        return [
            f"you need write access to push to {shown(u.ref)} (your role: {role or 'none'})" for u in updates
        ]
    # Deleting such a ref stays possible: that is how one pushed before this rule goes away.
    return [reason for u in updates if not is_zero(u.new) and (reason := invisible_reason(u.ref))]
