"""The push policy, asked from the web process exactly as the pre-receive hook asks it.

Every push and every web write that moves a ref is judged by one module,
repos/hooks/pushpolicy.py, whatever git access backends the site runs: the hooks import the
installed copy, this process the package's. What it judges by, the repository's rules
(protected branches and tags, bans, freezes...), comes from settings.PUSH_RULES, a function
`(repository) -> Rules` named the way VISIBILITY_RULE is (workspaces answers it). Without one,
repos' own (repos.selectors.push_rules): the default branch is protected and a mirror's
branches move only by its syncs.

Web writes that move refs without a push (a proposal's merge, an admin's ref removal, the web
editor) bypass git's hooks, so they call the entry point with the environment a push would
give the hook: `rules_from_env(env)`, then `decide_all(...)` -> the reasons for refusing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from django.conf import settings
from django.utils.module_loading import import_string

from gitcore import gittools
from repos.gitaccess.backends import hook_env
from repos.gitaccess.contract import GitRequest
from repos.hooks import pushpolicy, refspace
from repos.hooks.pushpolicy import Rules
from repos.hooks.refnames import judged_name
from repos.hooks.updates import Update, is_zero

# Named, not imported: the selectors load models, and this package loads with the apps.
OWN_RULES = "repos.selectors.push_rules"


@functools.cache
def _named(path: str) -> Callable[..., Rules]:
    return import_string(path)


def push_rules(repo) -> Rules:
    """settings.PUSH_RULES(repo), or repos' own rules without one."""
    return _named(getattr(settings, "PUSH_RULES", "") or OWN_RULES)(repo)


def push_env(req: GitRequest) -> dict[str, str]:
    """The hooks' environment for this request: the repository's rules, then what the
    backends add (theirs win a clash)."""
    rules = push_rules(req.repository)
    # Mapping branch pushes to workspaces needs a backend's proc-receive; that backend turns it
    # on per request. Without it, a branch push is judged as the branch write it is.
    rules.map_branches = False
    return {**rules.to_env(), **hook_env(req)}


def check_updates(req: GitRequest, updates: Sequence[Update]) -> list[str]:
    """Why the policy refuses these ref updates by req.user with req.role (empty: accept)."""
    judged, refused = [], []
    for u in updates:
        # Names that are not UTF-8 (kept as surrogates), as the hook reads them from git.
        name, reason = judged_name(u.ref, deleting=is_zero(u.new))
        if reason:
            refused.append(reason)
        else:
            judged.append(u if name == u.ref else Update(u.old, u.new, name))
    if refused:
        return refused
    repo_path = req.repository.disk_path
    return pushpolicy.decide_all(
        role=req.role,
        pusher=req.user.username if req.user is not None else "",
        updates=judged,
        rules=pushpolicy.rules_from_env(push_env(req)),
        is_ancestor=lambda old, new: gittools.is_ancestor(repo_path, old, new),
        workspace_ref_count=lambda user: gittools.count_refs(repo_path, refspace.workspace_prefix(user)),
    )
