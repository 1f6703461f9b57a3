# The ref-namespace policy: a pure function of (role, pusher, ref update, repository rules),
# table-tested, and imported by the pre-receive hook. Standalone: it must not import Django
# or anything of the project, because the hook runs it without booting an application
# (see repos/hooks/__init__.py). Git facts it needs (ancestry, ref counts) come in as
# callables (is_ancestor(old, new) -> bool, workspace_ref_count(user) -> int), so the
# function stays pure and the hook only asks git when a rule needs it. The entry point is the
# one every policy has (repos/hooks/policy.py): rules_from_env(env), then decide_all(...).
from __future__ import annotations

try:  # installed beside the hooks, with updates.py and refnames.py (repos.storage.install_hooks)
    from refnames import INVISIBLE, invisible_reason, shown
    from updates import Update
except ImportError:  # imported as part of the project (the web process, tests)
    from repos.hooks.refnames import INVISIBLE, invisible_reason, shown
    from repos.hooks.updates import Update

__all__ = [
    "INVISIBLE",
    "Rules",
    "Update",
    "decide",
    "decide_all",
    "invisible_reason",
    "rules_from_env",
    "shown",
]

WRITE_ROLES = ("maintainer", "admin")
READ_ROLES = ("reader", "maintainer", "admin")
MAX_REF_BYTES = 255
# The platform's own namespaces: cleanup's archive and moderation's legal hold. No push touches
# them, an admin's deletion included.
INTERNAL = ("refs/archive/", "refs/takedown/")

# Plain classes and environment variables, not dataclasses and JSON: the hook imports this
# module on every push, and those imports alone cost it tens of milliseconds (measured in
# bench/smart_http.py).


class Rules:
    __slots__ = (
        "banned",
        "default_branch",
        "frozen",
        "maintainers_edit_workspaces",
        "map_branches",
        "mirror",
        "protected",
        "ref_limit",
        "taken_down",
    )

    def __init__(
        self,
        default_branch="main",
        protected=None,
        maintainers_edit_workspaces=True,
        frozen=frozenset(),
        ref_limit=1000,
        banned=frozenset(),
        mirror=False,
        taken_down=frozenset(),
        map_branches=False,
    ):
        self.default_branch = default_branch
        # branch -> whether an admin allowed force-pushes to it
        self.protected = dict(protected or {})
        self.maintainers_edit_workspaces = maintainers_edit_workspaces
        self.frozen = frozenset(frozen)
        self.ref_limit = ref_limit
        # users banned from the repository by a moderator: no push at all
        self.banned = frozenset(banned)
        # a pull mirror: its branches and tags change only through the mirror's syncs
        self.mirror = bool(mirror)
        # workspaces under legal hold: nobody adds to them, admins included
        self.taken_down = frozenset(taken_down)
        # branch pushes by those without write access go to their workspace (proc-receive)
        self.map_branches = bool(map_branches)

    def __eq__(self, other):
        return isinstance(other, Rules) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        return "Rules(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def to_env(self) -> dict:
        """HOSTSITE_* variables for the hook. Branch and user names cannot hold ',' or ':'
        (git check-ref-format and the username rules), so simple lists are unambiguous."""
        return {
            "HOSTSITE_DEFAULT_BRANCH": self.default_branch,
            "HOSTSITE_PROTECTED": ",".join(
                f"{name}:{int(force)}" for name, force in sorted(self.protected.items())
            ),
            "HOSTSITE_MAINTAINERS_EDIT": "1" if self.maintainers_edit_workspaces else "0",
            "HOSTSITE_FROZEN": ",".join(sorted(self.frozen)),
            "HOSTSITE_WORKSPACE_REF_LIMIT": str(self.ref_limit),
            "HOSTSITE_BANNED": ",".join(sorted(self.banned)),
            "HOSTSITE_MIRROR": "1" if self.mirror else "0",
            "HOSTSITE_TAKEN_DOWN": ",".join(sorted(self.taken_down)),
            "HOSTSITE_MAP_BRANCHES": "1" if self.map_branches else "0",
        }

    @classmethod
    def from_env(cls, env) -> Rules:
        protected = {}
        for item in (env.get("HOSTSITE_PROTECTED") or "").split(","):
            name, _, force = item.rpartition(":")
            if name:
                protected[name] = force == "1"
        try:
            limit = int(env.get("HOSTSITE_WORKSPACE_REF_LIMIT") or 1000)
        except ValueError:
            limit = 1000
        return cls(
            default_branch=env.get("HOSTSITE_DEFAULT_BRANCH") or "main",
            protected=protected,
            maintainers_edit_workspaces=env.get("HOSTSITE_MAINTAINERS_EDIT", "1") == "1",
            frozen=frozenset(u for u in (env.get("HOSTSITE_FROZEN") or "").split(",") if u),
            ref_limit=limit,
            banned=frozenset(u for u in (env.get("HOSTSITE_BANNED") or "").split(",") if u),
            mirror=env.get("HOSTSITE_MIRROR") == "1",
            taken_down=frozenset(u for u in (env.get("HOSTSITE_TAKEN_DOWN") or "").split(",") if u),
            map_branches=env.get("HOSTSITE_MAP_BRANCHES") == "1",
        )


def rules_from_env(env) -> Rules:
    return Rules.from_env(env)


def _workspace_hint(pusher: str, name: str) -> str:
    return f"git push origin HEAD:refs/users/{pusher}/{name}"


def decide(
    *,
    role: str,
    pusher: str,
    update: Update,
    rules: Rules,
    is_ancestor,
    workspace_ref_count,
    creates_so_far: int = 0,
) -> str | None:
    """None to allow one ref update, else why it is refused and what would work instead."""
    ref, old, new = update.ref, update.old, update.new
    if len(ref.encode()) > MAX_REF_BYTES or any(ord(c) < 0x20 or ord(c) == 0x7F for c in ref):
        return f"{ref[:80]!r} is not a valid ref name (at most {MAX_REF_BYTES} bytes, no control characters)"
    # Deleting such a ref stays possible: that is how one pushed before this rule goes away.
    if not update.is_delete and (reason := invisible_reason(ref)):
        return reason
    if role not in READ_ROLES:
        return f"you cannot push to this repository (role: {role or 'none'})"
    if pusher in rules.banned:
        return "you are banned from pushing to this repository by a moderator"
    default = rules.default_branch

    if ref.startswith("refs/for/"):
        if pusher in rules.frozen:
            return f"your workspace on this repository is frozen by a moderator; {ref} was not accepted"
        if update.is_delete:
            return (
                f"{ref} cannot be deleted: refs/for/ only receives work. Delete the workspace ref "
                f"instead: git push origin :refs/users/{pusher}/<name>"
            )
        return None  # proc-receive turns it into a workspace ref

    if ref.startswith(("refs/heads/", "refs/tags/")):
        kind, name = (
            ("branch", ref[len("refs/heads/") :])
            if ref.startswith("refs/heads/")
            else ("tag", ref[len("refs/tags/") :])
        )
        if role not in WRITE_ROLES and rules.map_branches:
            if kind == "branch":
                # proc-receive writes it to refs/users/<pusher>/<name>: judged as that write. Its
                # old may be a branch's tip (the client was shown the branch): the hook counts
                # creations against the ref limit exactly.
                mapped = Update(update.old, update.new, f"refs/users/{pusher}/{name}")
                if len(mapped.ref.encode()) > MAX_REF_BYTES:
                    return f"{ref[:80]!r} is too long for your workspace (at most {MAX_REF_BYTES} bytes)"
                return _own_workspace(pusher, mapped, rules, workspace_ref_count, creates_so_far)
            return (
                f"you need write access to push tags ({ref}); tags are the maintainers' to make. "
                f"Push the work to your workspace instead ({_workspace_hint(pusher, name)}) "
                f"and ask a maintainer to tag it"
            )
        if rules.mirror:
            return (
                f"this repository mirrors an upstream: its branches and tags change only through the "
                f"mirror, so {ref} was not updated. Push your work to your workspace instead: "
                f"{_workspace_hint(pusher, name)}"
            )
        if role not in WRITE_ROLES:
            return (
                f"you need write access to push to {ref}; push to your workspace instead: "
                f"{_workspace_hint(pusher, name)} or git push origin HEAD:refs/for/{default}"
            )
        if kind == "branch" and (name == default or name in rules.protected):
            why = "the default branch" if name == default else "a protected branch"
            if update.is_delete:
                return f"{ref} is {why} and cannot be deleted"
            allow_force = rules.protected.get(name, False)
            if not update.is_create and not allow_force and not is_ancestor(old, new):
                return (
                    f"{ref} is {why}: non-fast-forward updates are refused. Fetch and rebase "
                    f"(git pull --rebase), or ask an admin to allow force-pushes to {name}"
                )
        return None

    if ref.startswith("refs/users/"):
        owner, sep, rest = ref[len("refs/users/") :].partition("/")
        if not owner or not sep or not rest:
            return f"{ref} names no workspace ref; use refs/users/{pusher}/<name>"
        if owner in rules.taken_down and not update.is_delete:
            return f"{owner}'s workspace on this repository was taken down by a moderator; {ref} was not accepted"
        if owner == pusher:
            return _own_workspace(pusher, update, rules, workspace_ref_count, creates_so_far)
        if role == "admin" or (role == "maintainer" and rules.maintainers_edit_workspaces):
            return None
        return f"{ref} is in {owner}'s workspace; push to yours instead: {_workspace_hint(pusher, rest)}"

    if role == "admin" and update.is_delete and not ref.startswith(INTERNAL):
        return None  # admins may remove any other ref (refs/pull/..., refs/remotes/... of an import)
    if update.is_delete:
        # A deletion gets a reason about deleting, not a hint about where to push.
        if ref.startswith(INTERNAL):
            return f"{ref} is not a ref you can push to: it belongs to the platform and nobody deletes it"
        return f"{ref} is not a ref you can push to: only the repository's admins may delete it"
    return (
        f"{ref} is not a ref you can push to. Use refs/users/{pusher}/<name> "
        f"(git push origin HEAD:refs/users/{pusher}/my-change) or git push origin HEAD:refs/for/{default}"
    )


def _own_workspace(pusher: str, update: Update, rules: Rules, workspace_ref_count, creates_so_far: int):
    """The rules of a write to the pusher's own workspace (a taken-down one was refused
    already, but for a branch push mapped to it: checked here too)."""
    ref = update.ref
    if pusher in rules.taken_down and not update.is_delete:
        return f"your workspace on this repository was taken down by a moderator; {ref} was not accepted"
    if pusher in rules.frozen:
        return f"your workspace on this repository is frozen by a moderator; {ref} was not updated"
    if update.is_create and workspace_ref_count(pusher) + creates_so_far >= rules.ref_limit:
        return (
            f"your workspace already holds {rules.ref_limit} refs, the limit; delete some with "
            f"git push origin :refs/users/{pusher}/<name>"
        )
    return None


def counts_as_create(role: str, pusher: str, update: Update, rules: Rules) -> bool:
    """Whether an accepted update creates a ref in the pusher's workspace (the ref limit)."""
    if not update.is_create:
        return False
    if update.ref.startswith(f"refs/users/{pusher}/"):
        return True
    return rules.map_branches and role not in WRITE_ROLES and update.ref.startswith("refs/heads/")


def decide_all(
    *,
    role: str,
    pusher: str,
    updates,
    rules: Rules,
    is_ancestor,
    workspace_ref_count,
) -> list[str]:
    """The reasons for refusing a whole push (empty: accept). One refused ref refuses all,
    as git's pre-receive does, so a push never half-lands."""
    reasons = []
    creates = 0
    for update in updates:
        reason = decide(
            role=role,
            pusher=pusher,
            update=update,
            rules=rules,
            is_ancestor=is_ancestor,
            workspace_ref_count=workspace_ref_count,
            creates_so_far=creates,
        )
        if reason:
            reasons.append(reason)
        elif counts_as_create(role, pusher, update, rules):
            creates += 1
    return reasons
