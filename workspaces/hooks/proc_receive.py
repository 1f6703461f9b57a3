# proc-receive: the pushes whose refs are not written as sent (githooks(5), "proc-receive").
# The web view routes here, per request (workspaces.access.hiding):
# - refs/for/<branch>[/<topic>]: nameless push (nameless_push.py);
# - refs/heads/<name> from a pusher who may not write branches, when the repository maps branch
#   pushes: the pusher's refs/users/<me>/<name>, reported back (`option refname`) so git prints
#   `my-fix -> refs/users/alice/my-fix`;
# - refs/users/<other>/... from those who may edit others' workspaces: hidden from every push
#   advertisement, so git sends them as creations (refcas.plan_cas says how they are judged);
# - an admin's deletions in other namespaces (refs/pull/...), not shown to them: compared with
#   the ref's tip, so the pushlog records what was deleted;
# - every ref of an atomic push that has any of the above: receive-pack runs this hook before
#   its own transaction, so only writing them all here, in one transaction, keeps it atomic.
# The pre-receive policy has judged every command under its pushed name already; this hook
# does the compare-and-swap. It runs in the process serving the push (gitcore.hooksocket: git's
# hook script only relays), every git command in the hook's environment (repos.hooks.hookgit).
from __future__ import annotations

from gitcore.hooksocket import HookCall
from repos.hooks import refspace
from repos.hooks.hookgit import environment, is_zero, run
from repos.hooks.pushpolicy import WRITE_ROLES
from repos.hooks.refnames import shown
from workspaces.hooks import nameless_push
from workspaces.hooks.refcas import Plan, apply, apply_atomic, plan_cas, plan_direct

_HEX = frozenset(b"0123456789abcdefABCDEF")
_OID = frozenset("0123456789abcdef")


class Malformed(Exception):
    """git's input is not the proc-receive protocol: nothing is written, the push is refused."""


def read_pkt(stream):
    header = stream.read(4)
    if len(header) < 4:
        raise Malformed("the input ends early")
    if not set(header) <= _HEX:
        raise Malformed(f"a packet length is not hex ({header!r})")
    length = int(header, 16)
    if length == 0:
        return None
    if length < 4:
        raise Malformed(f"a packet length of {length}")
    payload = stream.read(length - 4)
    if len(payload) < length - 4:
        raise Malformed("the input ends inside a packet")
    return payload


def read_section(stream):
    lines = []
    while True:
        payload = read_pkt(stream)
        if payload is None:
            return lines
        lines.append(payload)


def write_pkt(stream, text):
    # A ref name's bytes that are not UTF-8 go back to git as they came (read_commands).
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    stream.write(f"{len(data) + 4:04x}".encode() + data)


def env_int(env, name, default):
    value = env.get(name, "")
    return int(value) if value.isdigit() else default


class Push:
    """What the web view told the hook about this push (HOSTSITE_* variables)."""

    def __init__(self, env, options, atomic):
        self.atomic = atomic
        self.pusher = env.get("HOSTSITE_PUSHER", "")
        self.own = refspace.workspace_prefix(self.pusher)
        self.options = options
        self.limit = env_int(env, "HOSTSITE_WORKSPACE_REF_LIMIT", 1000)
        # Branch pushes of those who may not write branches go to their workspace.
        self.mapped = env.get("HOSTSITE_MAP_BRANCHES") == "1" and env.get("HOSTSITE_ROLE") not in WRITE_ROLES
        # Refs this pusher may not update (an atomic push routes every ref here, hidden or not).
        self.hidden = frozenset(env.get("HOSTSITE_PUSH_HIDDEN", "").split())
        # From the database (workspaces.nameless): which refs nameless pushes wrote, for which
        # branch, and which were restored after their work landed.
        self.restored = frozenset(env.get("HOSTSITE_RESTORED_REFS", "").split())
        self.heads = dict(
            item.rpartition(":")[::2] for item in env.get("HOSTSITE_NAMELESS_HEADS", "").split()
        )
        self._count = env.get("HOSTSITE_WORKSPACE_REF_COUNT", "")
        self.created = 0  # workspace refs this hook created (or will, atomically) so far

    def workspace_full(self):
        """Why one more ref may not be created in the pusher's workspace, or None."""
        if self._count.isdigit():
            # Counted by the web view before git started: add what this hook created since.
            count = int(self._count) + self.created
        else:
            count = run("for-each-ref", "--format=x", self.own).stdout.count("\n")
            count += self.created if self.atomic else 0  # written already unless atomic
        if count >= self.limit:
            return (
                f"your workspace already holds {self.limit} refs, the limit; delete some with "
                f"git push origin :{refspace.workspace_prefix(self.pusher)}<name>"
            )
        return None

    def plan(self, old, new, ref):
        if not self.pusher:
            return Plan.refused(ref, "pushes must go through hostsite's HTTP endpoint")
        if ref in self.hidden:
            return Plan.refused(ref, "deny updating a hidden ref")
        if ref.startswith(refspace.FOR):
            plan = nameless_push.plan(
                old,
                new,
                ref,
                self.pusher,
                self.options,
                self.limit - (self.created if self.atomic else 0),
                self.heads,
                self.restored,
            )
        elif self.mapped and ref.startswith("refs/heads/"):
            target = self.own + ref[len("refs/heads/") :]
            message = f"hostsite: branch push by {self.pusher} to {ref}"
            plan = plan_cas(
                ref,
                target,
                old,
                new,
                self.options,
                message=message,
                limit_check=self.workspace_full,
                optimistic=not self.atomic,  # an atomic push writes nothing before all are judged
            )
        elif ref.startswith(refspace.WORKSPACES) and not ref.startswith(self.own):
            message = f"hostsite: push by {self.pusher}"
            plan = plan_cas(ref, ref, old, new, self.options, message=message, optimistic=not self.atomic)
        else:
            # Every ref of an atomic push; an admin's deletion in another namespace.
            plan = plan_direct(ref, old, new, f"hostsite: push by {self.pusher}")
        if not plan.refusal and plan.target.startswith(self.own) and is_zero(plan.expected):
            self.created += 1
        return plan


def read_commands(stream):
    """The section of `<old> <new> <ref>` commands. A ref name is kept byte for byte (its bytes
    that are not UTF-8 as surrogates): git and the report get it back exactly."""
    commands = []
    for line in read_section(stream):
        parts = line.decode("utf-8", "surrogateescape").rstrip("\n").split(" ", 2)
        if (
            len(parts) != 3
            or not all(len(p) in (40, 64) and set(p) <= _OID for p in parts[:2])
            or not parts[2]
        ):
            raise Malformed(f"a command is not <old> <new> <ref> ({len(line)} bytes)")
        commands.append(parts)
    return commands


def handle(call: HookCall) -> int:
    """git's proc-receive for this push."""
    try:
        with environment(call.env):
            return serve(call.stdin, call.stdout, call.env, call.stderr)
    except Malformed as exc:
        call.stderr.write(
            f"hostsite: proc-receive: git's input was not understood ({exc}); nothing was written\n"
        )
        return 1


def serve(stdin, stdout, env, stderr) -> int:
    # Version negotiation: ask for push options (-o topic=..., -o force); learn whether the
    # push is atomic.
    first = read_section(stdin)
    caps = (
        first[0].split(b"\0", 1)[1].decode("utf-8", "replace").split() if first and b"\0" in first[0] else []
    )
    want_options = "push-options" in caps
    atomic = "atomic" in caps
    write_pkt(stdout, "version=1\0" + ("push-options" if want_options else ""))
    stdout.write(b"0000")
    stdout.flush()
    commands = read_commands(stdin)
    options = {}
    if want_options:
        for raw in read_section(stdin):
            key, _, value = raw.decode("utf-8", "replace").rstrip("\n").partition("=")
            options[key] = value
    push = Push(env, options, atomic)
    if atomic:
        plans = [push.plan(old, new, ref) for old, new, ref in commands]
        reports = apply_atomic(plans, f"hostsite: atomic push by {push.pusher}")
    else:
        plans, reports = [], []
        for old, new, ref in commands:  # one at a time: a ref may build on the one before
            plans.append(push.plan(old, new, ref))
            reports.append(apply(plans[-1]))
    for plan, (status, extra) in zip(plans, reports, strict=True):
        write_pkt(stdout, status)
        for line in extra:
            write_pkt(stdout, line)
        if status.startswith("ok ") and plan.target != plan.ref:
            if plan.ref.startswith(refspace.FOR):
                nameless_push.note_target(env, plan.ref, plan.target)
            # Only report-status-v2 carries `option refname`, and libgit2 and dulwich speak v1:
            # their users learn the name from this `remote:` line (tests/repos/test_other_clients.py).
            stderr.write(f"hostsite: {shown(plan.ref)} landed in {shown(plan.target)}\n")
    stdout.write(b"0000")
    stdout.flush()
    return 0
