"""workspaces' side of the git access contract (repos.gitaccess): nameless and mapped branch
pushes through proc-receive, per-request ref hiding (hiding.py, from the visibility component's
git face), and the hooks' environment (backend.py). The push policy itself is repos'
(repos/hooks/pushpolicy.py); the rules it reads come from workspaces.selectors.rules_for,
named in settings.PUSH_RULES.
Named in settings.GIT_ACCESS_BACKENDS as workspaces.access.backend.WorkspaceAccess."""
