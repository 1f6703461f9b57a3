"""One git access contract (repos.gitaccess.contract), the backends that implement it
(settings.GIT_ACCESS_BACKENDS, combined in repos.gitaccess.backends), the one push policy the
hooks and web writes share and the rules it reads (repos.gitaccess.policy), and who may reach
a repository over git at all (repos.gitaccess.authorize)."""

from repos.gitaccess.backends import (
    backends,
    git_config,
    hidden_objects,
    hook_env,
    hook_handlers,
    push_aliases,
)
from repos.gitaccess.contract import BaseGitAccess, GitAccess, GitClient, GitRequest
from repos.gitaccess.policy import check_updates, push_env, push_rules

__all__ = [
    "BaseGitAccess",
    "GitAccess",
    "GitClient",
    "GitRequest",
    "backends",
    "check_updates",
    "git_config",
    "hidden_objects",
    "hook_env",
    "hook_handlers",
    "push_aliases",
    "push_env",
    "push_rules",
]
