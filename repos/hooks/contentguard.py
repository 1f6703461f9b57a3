# Content a write may not publish again: which ref updates reach blocked content. The
# pre-receive handler walks a push with it (in the hook's environment: the pushed objects are
# in git's quarantine), and the web process calls the same function for writes that go through
# no hook (a merge, a restore, the web editor), so a push and a web write meet one rule,
# walked one way. No database: git is asked through the `git` callable.
#
# Blocked content is given by whoever owns the rule (workspaces.visibility.republish):
# - the commits that only refs under `prefixes` reach (a take-down's), and
# - `objects`, listed by id (any type), whatever reaches them.
# Everything else goes through, identical bytes included.
from __future__ import annotations

from repos.hooks.updates import is_zero


def refused_refs(updates, *, prefixes, objects, own_prefix, git):
    """The refs among `updates` (objects with .ref and .new) whose new history reaches blocked
    content; [] when none does.

    `git(args, input=None, before=False)` runs git in the repository and returns (returncode,
    stdout text); `before=True` asks the repository as it was before this push (without its
    quarantine), where it differs.

    Each new tip is walked beyond the branches, the tags and the writer's own workspace: what
    is left is what the write brings or builds on. Commits a take-down holds can only be among
    what the repository held before the write, so the taken-down set is computed only when
    such commits are reached (building on someone else's workspace, say): an ordinary push
    never pays for it."""
    objects = frozenset(objects)
    if not prefixes and not objects:
        return []
    own = []
    if own_prefix:
        code, out = git(["for-each-ref", "--format=^%(objectname)", own_prefix])
        own = out.split() if code == 0 else []
    reached = {}
    for update in updates:
        if is_zero(update.new):
            continue
        walk = ["rev-list", "--no-object-names", "--stdin", "--not", "--branches", "--tags"]
        if objects:
            walk.insert(1, "--objects")
        code, out = git(walk, input="".join(f"{line}\n" for line in [update.new, *own]))
        if code != 0:
            return [update.ref]  # what cannot be walked cannot be shown to be clean
        reached[update.ref] = set(out.split())
    refused = {ref for ref, found in reached.items() if not found.isdisjoint(objects)}
    if prefixes:
        refused.update(_reaching_taken_down(reached, prefixes, git))
    return sorted(refused)


def _reaching_taken_down(reached, prefixes, git):
    found = set().union(*reached.values()) if reached else set()
    if not found:
        return []
    code, out = git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        input="".join(f"{oid}\n" for oid in sorted(found)),
        before=True,
    )
    held = {oid for oid, _, kind in (line.partition(" ") for line in out.splitlines()) if kind == "commit"}
    if not held:
        return []
    code, out = git(["for-each-ref", "--format=%(objectname)", *prefixes], before=True)
    tips = sorted(set(out.split())) if code == 0 else []
    if not tips:
        return []
    excludes = [f"--exclude={prefix}*" for prefix in prefixes]
    code, out = git(["rev-list", *tips, "--not", *excludes, "--all"], before=True)
    if code != 0:
        return [ref for ref, objects in reached.items() if objects & held]
    taken_down = held.intersection(out.split())
    return [ref for ref, objects in reached.items() if not objects.isdisjoint(taken_down)]
