"""What the proc-receive hook (workspaces/hooks/proc_receive.py) needs to know from the
database about a nameless push, since git cannot tell it:

- HOSTSITE_NAMELESS_HEADS: the pusher's refs that nameless pushes wrote, each with the branch
  it was for (`<ref>:<branch>`, from the `hostsite.for` lines proc-receive records in the
  pushlog). Only these may be advanced: a ref the pusher created under a name of the same
  shape with a plain push is theirs to move.
- HOSTSITE_RESTORED_REFS: the pusher's refs that merged-ref cleanup archived and the owner then
  restored. Their work landed, so work pushed later on top of the branch would fast-forward
  them; a restore is a plain ref creation in git, and only the database remembers it.

Both are separated by spaces, which ref and branch names cannot hold (nor ':')."""

from __future__ import annotations

from repos.hooks import refspace
from repos.models import Push
from workspaces.models import ArchivedRef

ENV_HEADS = "HOSTSITE_NAMELESS_HEADS"
ENV_RESTORED = "HOSTSITE_RESTORED_REFS"
# One environment string holds at most 128 KiB (Linux MAX_ARG_STRLEN). What is left off errs
# safe: a head not listed is not advanced (the push gets a ref of its own); a restored ref not
# listed is still never advanced while its work is on the branch (the hook checks that in git).
MAX_CHARS = 48 * 1024
RECENT_PUSHES = 1000
RECENT_RESTORES = 2000
_FOR = "hostsite.for="


def hook_environment(repo, user, commands) -> dict[str, str]:
    """The two variables, for a push with refs/for/ commands (one query each)."""
    if user is None or not any(ref.startswith(refspace.FOR) for _old, _new, ref in commands):
        return {}
    return {ENV_HEADS: _bounded(_heads(repo, user)), ENV_RESTORED: _bounded(_restored(repo, user))}


def _heads(repo, user):
    """`<ref>:<branch>` for each ref the pusher's recent nameless pushes wrote, newest first;
    a ref's latest nameless push says its branch."""
    own = refspace.workspace_prefix(user.username)
    seen = set()
    pushes = (
        Push.objects.filter(repository=repo, pusher=user, touches_workspace=True)
        .order_by("-pk")
        .values_list("push_options", flat=True)[:RECENT_PUSHES]
    )
    for options in pushes:
        for option in options or []:
            if not isinstance(option, str) or not option.startswith(_FOR):
                continue
            ref, _, branch = option[len(_FOR) :].partition(" ")
            if ref.startswith(own) and branch and ref not in seen and not {" ", ":"} & set(ref + branch):
                seen.add(ref)
                yield f"{ref}:{branch}"


def _restored(repo, user):
    rows = (
        ArchivedRef.objects.filter(repository=repo, username=user.username, state=ArchivedRef.State.RESTORED)
        .order_by("-restored_at", "-pk")
        .values_list("ref", flat=True)[:RECENT_RESTORES]
    )
    return (ref for ref in rows if " " not in ref)


def _bounded(items) -> str:
    kept, size = [], 0
    for item in items:
        size += len(item) + 1
        if size > MAX_CHARS:
            break
        kept.append(item)
    return " ".join(dict.fromkeys(kept))
