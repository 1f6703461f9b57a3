# A standalone push policy for tests/repos/test_gitaccess.py: the same entry point as
# repos/hooks/policy.py, refusing every update that is not a deletion, with its own words.
from __future__ import annotations

WRITE_ROLES = ("maintainer", "admin")
REFUSAL = "the test policy refuses {ref}"


def rules_from_env(env):
    return env.get("TEST_POLICY_RULE", "")


def decide_all(*, role, pusher, updates, rules=None, is_ancestor=None, workspace_ref_count=None):
    return [REFUSAL.format(ref=u.ref) + rules for u in updates if not u.is_delete]
