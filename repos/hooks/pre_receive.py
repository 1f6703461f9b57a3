"""pre-receive: the platform's gate for every ref update, answered in the process serving the
push (gitcore.hooksocket; git's hook script only relays). The request's view decided who is
pushing, their role and the repository's rules (the push's environment, repos.pipeline.push);
this handler asks git only for what a rule needs (ancestry, ref counts, what new history
reaches), in the hook's environment: the pushed objects are still in git's quarantine."""

from __future__ import annotations

from gitcore.hooksocket import HookCall
from repos.hooks import contentguard, pushpolicy, refspace
from repos.hooks.hookgit import environment, run
from repos.hooks.refnames import judged_name
from repos.hooks.updates import Update, is_zero


def is_ancestor(old: str, new: str) -> bool:
    return run("merge-base", "--is-ancestor", old, new).returncode == 0


def workspace_ref_count(env, user: str) -> int:
    # Counted by the web view before git started, when the push creates workspace refs.
    counted = env.get("HOSTSITE_WORKSPACE_REF_COUNT")
    if counted and counted.isdigit() and user == env.get("HOSTSITE_PUSHER"):
        return int(counted)
    done = run("for-each-ref", "--format=x", refspace.workspace_prefix(user))
    if done.returncode:
        raise RuntimeError("git for-each-ref failed")
    return done.stdout.count("\n")


def blocked(env, updates) -> list[str]:
    """The refs of this push whose new history reaches content that may not be published again
    (contentguard.py): the commits of taken-down workspaces, and content staff blocked by id.
    The web view passes them only when the repository has any and the pusher is not staff, so
    other pushes never get here."""
    prefixes = env.get("HOSTSITE_BLOCKED_PREFIXES", "").split()
    objects = env.get("HOSTSITE_BLOCKED_OBJECTS", "").split()
    if not prefixes and not objects:
        return []
    # The repository as it was before the push: without the quarantine's object directory.
    unquarantined = {
        k: v
        for k, v in env.items()
        if k not in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH")
    }

    def git(args, input=None, before=False):
        done = run(*args, input=input, env=unquarantined if before else None)
        return done.returncode, done.stdout

    return contentguard.refused_refs(
        updates,
        prefixes=prefixes,
        objects=objects,
        own_prefix=refspace.workspace_prefix(env.get("HOSTSITE_PUSHER", "")),
        git=git,
    )


_HEX = frozenset("0123456789abcdef")


def _is_oid(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def read_updates(data: bytes) -> tuple[list, list]:
    """The updates git passes on stdin (`<old> <new> <ref>` lines of bytes), and the reasons to
    refuse the push for lines the policy cannot judge: a ref name that is not UTF-8, unless it
    is deleted (refnames.judged_name), and a line that is not an update (git never writes one)."""
    updates, refusals, malformed = [], [], 0
    for raw in data.split(b"\n"):
        if not raw:
            continue
        parts = raw.decode("utf-8", "surrogateescape").split(" ", 2)
        if (
            len(parts) != 3
            or not (_is_oid(parts[0]) and _is_oid(parts[1]))
            or not parts[2]
            or any(c < " " or c == "\x7f" for c in parts[2])
        ):
            malformed += 1
            continue
        old, new, ref = parts
        name, reason = judged_name(ref, deleting=is_zero(new))
        if reason:
            refusals.append(reason)
        else:
            updates.append(Update(old, new, name))
    if malformed:
        refusals.append(f"git passed this hook {malformed} line(s) that are not ref updates")
    return updates, refusals


def handle(call: HookCall) -> int:
    """git's pre-receive for this push: 0 accepts every update, 1 refuses the push, each reason
    on one `hostsite:` line."""
    env = call.env
    pusher = env.get("HOSTSITE_PUSHER")
    if not pusher:
        call.stderr.write("hostsite: pushes must go through hostsite's HTTP or SSH endpoint\n")
        return 1
    updates, refused = read_updates(call.stdin.read())
    if refused:
        for reason in refused:
            call.stderr.write(f"hostsite: {reason}\n")
        return 1
    with environment(env):
        reasons = pushpolicy.decide_all(
            role=env.get("HOSTSITE_ROLE", ""),
            pusher=pusher,
            updates=updates,
            rules=pushpolicy.rules_from_env(env),
            is_ancestor=is_ancestor,
            workspace_ref_count=lambda user: workspace_ref_count(env, user),
        )
        if not reasons:
            reasons = [
                f"{ref}: this push contains content a moderator took down or blocked; it cannot be published again"
                for ref in blocked(env, updates)
            ]
    for reason in reasons:
        call.stderr.write(f"hostsite: {reason}\n")
    return 1 if reasons else 0
