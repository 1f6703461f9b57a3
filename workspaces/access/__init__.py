"""workspaces' side of the git access contract (repos.gitaccess): the ref-namespace policy the
hooks run (policy.py, a standalone file), nameless pushes through proc-receive, per-request ref
hiding and the protocol v2 want check (hiding.py), and the hooks' environment (backend.py).
Named in settings.GIT_ACCESS_BACKENDS as workspaces.access.WorkspaceAccess."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Loaded on first use: workspaces.selectors imports the policy's Rules from this package,
    # and the backend imports the selectors.
    if name == "WorkspaceAccess":
        from workspaces.access.backend import WorkspaceAccess

        return WorkspaceAccess
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
