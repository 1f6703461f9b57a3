# The push policy: a pure function of (role, pusher, ref update, repository rules), the one
# every push and every web write that moves a ref is judged by, whatever git access backends
# the site runs. Table-tested. No Django and no database: pre-receive's handler applies it on
# the hook socket's thread (repos/hooks/__init__.py), where a query could wait on the request's
# own transaction. Git facts it needs (ancestry,
# ref counts) come in as callables (is_ancestor(old, new) -> bool, workspace_ref_count(user)
# -> int), so the function stays pure and the hook only asks git when a rule needs it.
# Entry point: rules_from_env(env), then decide_all(...).
from __future__ import annotations

from repos.hooks import refspace
from repos.hooks.refnames import INVISIBLE, invisible_reason, shown
from repos.hooks.updates import Update

# mypy treats a constant of this name as true: only the type checker reads what it guards.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FIELDS",
    "INVISIBLE",
    "READ_ROLES",
    "WRITE_ROLES",
    "Rules",
    "Update",
    "decide",
    "decide_all",
    "invisible_reason",
    "rules_from_env",
    "shown",
]

# The roles, defined here once: the hooks, the web process and every app ask this module.
WRITE_ROLES = ("maintainer", "admin")
READ_ROLES = ("reader", "maintainer", "admin")
MAX_REF_BYTES = 255
# The platform's own namespaces: cleanup's archive and moderation's legal hold. No push touches
# them, an admin's deletion included.
INTERNAL = refspace.INTERNAL


# How a field travels in its HOSTSITE_* variable: (to text, from text, the constructor's
# coercion). From text raises ValueError where the text cannot be read, and the field keeps its
# default. Branch and user names cannot hold ',' or ':' (git check-ref-format and the username
# rules) and no ref name holds a newline, so these simple lists are unambiguous.
def _text(text: str) -> str:
    if not text:
        raise ValueError("empty")
    return text


def _protected(text: str) -> dict:
    found = {}
    for item in text.split(","):
        name, _, force = item.rpartition(":")
        if name:
            found[name] = force == "1"
    return found


TEXT = (str, _text, str)
FLAG = (lambda v: "1" if v else "0", lambda text: text == "1", bool)
NUMBER = (str, int, int)
NAMES = (lambda v: ",".join(sorted(v)), lambda t: frozenset(n for n in t.split(",") if n), frozenset)
LINES = (lambda v: "\n".join(v), lambda t: tuple(p for p in t.split("\n") if p), tuple)
# branch -> whether an admin allowed force-pushes to it
BRANCH_FORCE = (
    lambda v: ",".join(f"{name}:{int(force)}" for name, force in sorted(v.items())),
    _protected,
    lambda v: dict(v or {}),
)

# One row per rule: (attribute, default, environment variable, codec). A new rule is a row
# here and its branch in decide().
FIELDS: tuple[tuple[str, Any, str, tuple], ...] = (
    ("default_branch", "main", "HOSTSITE_DEFAULT_BRANCH", TEXT),
    ("protected", {}, "HOSTSITE_PROTECTED", BRANCH_FORCE),
    # fnmatch patterns of tag names: created by a write role, never moved, deleted by admins
    ("protected_tags", (), "HOSTSITE_PROTECTED_TAGS", LINES),
    # maintainers may push to other users' workspaces (admins always may)
    ("maintainers_edit_workspaces", True, "HOSTSITE_MAINTAINERS_EDIT", FLAG),
    ("frozen", frozenset(), "HOSTSITE_FROZEN", NAMES),
    ("ref_limit", 1000, "HOSTSITE_WORKSPACE_REF_LIMIT", NUMBER),
    # users banned from the repository by a moderator: no push at all
    ("banned", frozenset(), "HOSTSITE_BANNED", NAMES),
    # a pull mirror: its branches and tags change only through the mirror's syncs
    ("mirror", False, "HOSTSITE_MIRROR", FLAG),
    # workspaces under legal hold: nobody adds to them, admins included
    ("taken_down", frozenset(), "HOSTSITE_TAKEN_DOWN", NAMES),
    # branch pushes by those without write access go to their workspace (proc-receive)
    ("map_branches", False, "HOSTSITE_MAP_BRANCHES", FLAG),
)


# A plain class and environment variables, not dataclasses and JSON: the hook imports this
# module on every push, and those imports alone cost it tens of milliseconds (measured in
# bench/smart_http.py).
class Rules:
    __slots__ = tuple(name for name, _default, _var, _codec in FIELDS)

    if TYPE_CHECKING:  # the fields come from FIELDS, which the type checker cannot read

        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def __init__(self, **values):
        unknown = set(values) - set(self.__slots__)
        if unknown:
            raise TypeError(f"Rules has no field {', '.join(sorted(unknown))}")
        for name, default, _var, (_write, _read, coerce) in FIELDS:
            setattr(self, name, coerce(values.get(name, default)))

    def __eq__(self, other):
        return isinstance(other, Rules) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self):
        return "Rules(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def to_env(self) -> dict:
        """HOSTSITE_* variables for the hook."""
        return {var: write(getattr(self, name)) for name, _default, var, (write, _r, _c) in FIELDS}

    @classmethod
    def from_env(cls, env) -> Rules:
        values = {}
        for name, _default, var, (_write, read, _coerce) in FIELDS:
            text = env.get(var)
            if text is None:
                continue
            try:
                value = read(text)
            except ValueError:
                continue  # unreadable: the default
            values[name] = value
        return cls(**values)


def rules_from_env(env) -> Rules:
    return Rules.from_env(env)


def _workspace_hint(pusher: str, name: str) -> str:
    return f"git push origin HEAD:{refspace.workspace_prefix(pusher)}{name}"


def protecting_pattern(name: str, patterns) -> str | None:
    """The first protected-tag pattern matching this tag name, or None."""
    if not patterns:
        return None
    # Imported here: it brings re, which only a push judged against tag patterns needs.
    from fnmatch import fnmatchcase

    return next((p for p in patterns if fnmatchcase(name, p)), None)


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

    if ref.startswith(refspace.FOR):
        if pusher in rules.frozen:
            return f"your workspace on this repository is frozen by a moderator; {ref} was not accepted"
        if update.is_delete:
            return (
                f"{ref} cannot be deleted: {refspace.FOR} only receives work. Delete the workspace ref "
                f"instead: git push origin :{refspace.workspace_prefix(pusher)}<name>"
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
                mapped = Update(update.old, update.new, refspace.workspace_ref(pusher, name))
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
                f"{_workspace_hint(pusher, name)} or git push origin HEAD:{refspace.FOR}{default}"
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
        if kind == "tag" and (pattern := protecting_pattern(name, rules.protected_tags)):
            if update.is_delete and role != "admin":
                return f"{ref} is a protected tag ({pattern}): only the repository's admins may delete it"
            if not update.is_delete and not update.is_create:
                return (
                    f"{ref} is a protected tag ({pattern}) and cannot be moved; "
                    f"tag the new commit under a new name"
                )
        return None

    if ref.startswith(refspace.WORKSPACES):
        owner, sep, rest = ref[len(refspace.WORKSPACES) :].partition("/")
        if not owner or not sep or not rest:
            return f"{ref} names no workspace ref; use {refspace.workspace_prefix(pusher)}<name>"
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
        f"{ref} is not a ref you can push to. Use {refspace.workspace_prefix(pusher)}<name> "
        f"(git push origin HEAD:{refspace.workspace_prefix(pusher)}my-change) or git push origin HEAD:{refspace.FOR}{default}"
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
            f"git push origin :{refspace.workspace_prefix(pusher)}<name>"
        )
    return None


def counts_as_create(role: str, pusher: str, update: Update, rules: Rules) -> bool:
    """Whether an accepted update creates a ref in the pusher's workspace (the ref limit)."""
    if not update.is_create:
        return False
    if update.ref.startswith(refspace.workspace_prefix(pusher)):
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
