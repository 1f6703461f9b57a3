"""WorkspaceAccess: what workspaces adds to every git request, through the git access
contract (repos.gitaccess)."""

from __future__ import annotations

from gitcore.hiderefs import is_hidden
from gitcore.hooksocket import Handler
from repos.gitaccess import BaseGitAccess, GitRequest
from repos.hooks import refspace
from repos.hooks.updates import is_zero
from workspaces import browse, nameless, visibility
from workspaces.access import hiding
from workspaces.hooks import proc_receive
from workspaces.visibility import gitface


class WorkspaceAccess(BaseGitAccess):
    def hook_handlers(self) -> dict[str, Handler]:
        # Nameless pushes (refs/for/...), mapped branch pushes and writes to others' workspaces
        # go through proc-receive.
        return {"proc-receive": proc_receive.handle}

    def hook_env(self, req: GitRequest) -> dict[str, str]:
        repo, user = req.repository, req.user
        env = {}
        # The repository's rules come from settings.PUSH_RULES (selectors.rules_for), whatever
        # the backends; mapping branch pushes is this backend's, through its proc-receive.
        # Only a git client's push goes through proc-receive: a web write (no client) to
        # refs/heads/ is a write to the branch, and the policy must judge it as one.
        mapped = user is not None and req.client is not None and hiding.maps_branches(repo, req.role)
        env["HOSTSITE_MAP_BRANCHES"] = "1" if mapped else "0"
        creates = (refspace.workspace_prefix(user.username), refspace.FOR) if user is not None else ()
        if user is not None and any(
            (is_zero(old) and ref.startswith(creates)) or (mapped and ref.startswith("refs/heads/"))
            for old, _new, ref in req.commands
        ):
            # The push creates refs in the pusher's workspace: count what is there now, here,
            # so the hook need not start git (and import subprocess) on the push's critical
            # path. A concurrent push by the same user can overshoot the limit by its own size.
            # A mapped branch push may create a workspace ref whatever old it sends (the client
            # sends a branch's tip when it was shown one of that name).
            env["HOSTSITE_WORKSPACE_REF_COUNT"] = str(browse.count_user_refs(repo, user.username))
        if user is not None and "atomic" in req.capabilities:
            # An atomic push may route every ref through proc-receive, hidden ones included:
            # the hook refuses those, as git would have (hiding.routed_refs).
            hidden = hiding.push_hidden(repo, user, req.role)
            refused = sorted({ref for _o, _n, ref in req.commands if is_hidden(ref, hidden)})
            if refused:
                env["HOSTSITE_PUSH_HIDDEN"] = " ".join(refused)
        # Which refs nameless pushes wrote, and which were restored after their work landed:
        # only the database knows, and proc-receive advances only the former.
        env.update(nameless.hook_environment(repo, user, req.commands))
        # Pushes may not publish a take-down's commits or blocked content again (pre-receive).
        env.update(visibility.hook_environment(repo, user, req.commands))
        return env

    def git_config(
        self, req: GitRequest, *, advertise: bool, refs: list[str] | None
    ) -> list[tuple[str, str]]:
        return hiding.git_config(
            req.repository,
            req.user,
            req.role,
            service=req.service,
            advertise=advertise,
            commands=req.commands,
            atomic="atomic" in req.capabilities,
        )

    def push_aliases(self, req: GitRequest) -> list[tuple[str, str]]:
        if req.service != "receive-pack":
            return []
        return hiding.push_aliases(req.repository, req.user, req.role)

    def hidden_objects(self, req: GitRequest, oids: frozenset[str]) -> set[str]:
        return gitface.hidden_objects(req.repository, req.user, req.role, oids)
