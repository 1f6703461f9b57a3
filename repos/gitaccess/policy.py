"""The push policy, asked from the web process exactly as the pre-receive hook asks it.

Web writes that move refs without a push (a proposal's merge, an admin's ref removal) bypass
git's hooks, so they load the very file the hooks install as policy.py (the last backend's, or
repos' default) and call its entry point with the environment a push would give the hook:
`rules_from_env(env)`, then `decide_all(...)` -> the reasons for refusing (empty: accept).
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from types import ModuleType

from repos import gittools
from repos.gitaccess.backends import hook_env, policy_source
from repos.gitaccess.contract import GitRequest
from repos.hooks.updates import Update


def policy_module() -> ModuleType:
    return _load(str(policy_source()))


@functools.cache
def _load(path: str) -> ModuleType:
    # A standalone file (no package): loaded by path, as the hook imports its installed copy.
    spec = importlib.util.spec_from_file_location("hostsite_push_policy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_updates(req: GitRequest, updates: Sequence[Update]) -> list[str]:
    """Why the policy refuses these ref updates by req.user with req.role (empty: accept)."""
    policy = policy_module()
    repo_path = req.repository.disk_path
    env = hook_env(req)
    return policy.decide_all(
        role=req.role,
        pusher=req.user.username if req.user is not None else "",
        updates=list(updates),
        rules=policy.rules_from_env(env),
        is_ancestor=lambda old, new: gittools.is_ancestor(repo_path, old, new),
        workspace_ref_count=lambda user: gittools.count_refs(repo_path, f"refs/users/{user}/"),
    )
