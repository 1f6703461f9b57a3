"""One git access contract (repos.gitaccess.contract), the backends that implement it
(settings.GIT_ACCESS_BACKENDS, combined in repos.gitaccess.backends), the policy the hooks and
web writes share (repos.gitaccess.policy), and who may reach a repository over git at all
(repos.gitaccess.authorize)."""

from repos.gitaccess.backends import (
    backends,
    commit_hidden,
    extra_hooks,
    git_config,
    hook_env,
    policy_source,
    push_aliases,
    refused_wants,
)
from repos.gitaccess.contract import BaseGitAccess, GitAccess, GitClient, GitRequest
from repos.gitaccess.policy import check_updates, policy_module

__all__ = [
    "BaseGitAccess",
    "GitAccess",
    "GitClient",
    "GitRequest",
    "backends",
    "check_updates",
    "commit_hidden",
    "extra_hooks",
    "git_config",
    "hook_env",
    "policy_module",
    "policy_source",
    "push_aliases",
    "refused_wants",
]
