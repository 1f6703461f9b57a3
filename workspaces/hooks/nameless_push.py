# Nameless push: `git push origin HEAD:refs/for/<branch>[/<topic>]` (or with -o topic=<name>)
# lands in the pusher's workspace under a name the server picks. A push that fast-forwards one
# of the pusher's live nameless heads for the same branch advances it (nameless_head); any other
# work gets a ref of its own. Part of workspaces' proc-receive handler, whose git commands run
# in the hook's environment (repos.hooks.hookgit). How heads are named, and why that layout
# never collides with a mapped branch push: repos/hooks/refspace.py.
import re

from repos.hooks import refspace
from repos.hooks.hookgit import ZERO, is_ancestor, is_zero, run
from workspaces.hooks.refcas import Plan

SHORT = refspace.NAMELESS_SHORT
_TOPIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
MAX_SAME_NAME = 100


def ref_exists(ref):
    return run("show-ref", "--verify", "--quiet", ref).returncode == 0


def split_target(rest):
    """refs/for/<branch>[/<topic>]: the longest existing branch wins (branches contain '/')."""
    parts = rest.split("/")
    for cut in range(len(parts), 0, -1):
        branch = "/".join(parts[:cut])
        if ref_exists(refspace.branch_ref(branch)):
            return branch, "/".join(parts[cut:])
    return None, rest


def plan(old, new, ref, pusher, options, limit, heads=None, restored=frozenset()):
    """The Plan for one refs/for/ command. `heads`: the refs nameless pushes wrote, with their
    branch; `restored`: refs restored after their work landed (both from the web view,
    workspaces.nameless)."""
    heads = heads or {}
    if is_zero(new):
        return Plan.refused(
            ref,
            f"deleting through {refspace.FOR} is not possible; delete the workspace ref: "
            f"git push origin :{refspace.workspace_ref(pusher, '<name>')}",
        )
    branch, topic = split_target(refspace.for_target(ref))
    if branch is None:
        return Plan.refused(
            ref, f"no branch {topic!r} to propose work for; push to {refspace.for_ref('<existing branch>')}"
        )
    if is_ancestor(new, refspace.branch_ref(branch)):
        # A head at a commit the branch has would be merged work from the start, and every
        # later push on top of the branch would descend from it.
        return Plan.refused(
            ref, f"no new changes: {new[:SHORT]} is already on {branch}; commit your work and push again"
        )
    topic = options.get("topic") or topic
    prefix = refspace.workspace_prefix(pusher)
    if topic:
        if not _TOPIC.match(topic):
            return Plan.refused(ref, f"invalid topic {topic!r}: letters, digits, '.', '_' and '-'")
        target = refspace.workspace_ref(pusher, topic)
        current = run("rev-parse", "--verify", "--quiet", target).stdout.strip() or ZERO
        refusal = retired_topic(target, current, branch, heads, restored)
        if refusal:
            return Plan.refused(ref, refusal)
    else:
        target, current = nameless_target(new, branch, pusher, heads, restored)
        if target is None:
            return Plan.refused(ref, f"too many workspace refs named after {new[:SHORT]}; delete some")
    if is_zero(current):
        count = run("for-each-ref", "--format=x", prefix).stdout.count("\n")  # exact: git runs anyway
        if count >= limit:
            return Plan.refused(
                ref,
                f"your workspace already holds {limit} refs, the limit; delete some with "
                f"git push origin :{refspace.workspace_ref(pusher, '<name>')}",
            )
    forced = not is_zero(current) and current != new and not is_ancestor(current, new)
    return Plan(ref, target, current, new, forced, f"hostsite: nameless push by {pusher} to {ref}")


def nameless_target(new, branch, pusher, heads, restored):
    """(ref, its current tip or ZERO) for a nameless push of `new` for `branch`: the nameless
    head it builds on, or else a fresh name (refspace.nameless_ref) that is neither a ref nor
    the directory of one, so git never fails to lock it."""
    head = nameless_head(new, branch, pusher, heads, restored)
    if head:
        return head
    short = run("rev-parse", f"--short={SHORT}", new).stdout.strip()
    # The name is taken by a head that may not advance (restored, merged, or other work), or
    # by a ref a plain push put below that name: a numbered name beside it, never that ref.
    first = refspace.nameless_ref(pusher, branch, short)
    # Patterns with a '*' match one component (for-each-ref uses wildmatch with WM_PATHNAME):
    # the names beside, then everything below them.
    listed = run("for-each-ref", "--format=%(refname)", f"{first}*", f"{first}*/**").stdout.split()
    for n in range(1, MAX_SAME_NAME + 1):
        name = refspace.nameless_ref(pusher, branch, short, n)
        if not refspace.name_conflicts(name, listed):
            return name, ZERO
    return None, ZERO


def nameless_head(new, branch, pusher, heads, restored):
    """The pusher's nameless head for `branch` that `new` fast-forwards, as (ref, tip), or None.
    Candidates: refs shaped as nameless heads for this branch that nameless pushes for it
    wrote (a plain push may use such a name too), that hold work the branch lacks (a merged
    head would capture every later push built on the branch), and that were not restored after
    merged-ref cleanup archived them (their work landed). A topic ref is never one: the
    database names it with its branch, but its shape is not a nameless head's."""
    listed = run(
        "for-each-ref",
        "--sort=-committerdate",
        "--format=%(refname) %(objectname)",
        f"--no-merged={refspace.branch_ref(branch)}",
        refspace.workspace_ref(pusher, f"{refspace.nameless_stem(branch)}-*"),
    ).stdout
    for line in listed.splitlines():
        head_ref, head_sha = line.split(" ", 1)
        if (
            not refspace.is_nameless_for(head_ref, branch)
            or heads.get(head_ref) != branch
            or head_ref in restored
        ):
            continue
        if is_ancestor(head_sha, new):
            return head_ref, head_sha
    return None


def retired_topic(target, current, branch, heads, restored):
    """Why a topic push may not move the existing topic ref, or None. A topic names one ref,
    so other work cannot get a new one: the push is refused rather than capture a ref whose
    work landed, or that was proposed for another branch. A live topic ref of the same branch
    is the topic's work and follows it, rewritten or not (a new revision of its proposal)."""
    if is_zero(current):
        return None
    if target in restored:
        why = "was restored after its work landed"
    elif is_ancestor(current, refspace.branch_ref(branch)):
        why = f"holds work already on {branch}"
    elif heads.get(target, branch) != branch:
        why = f"holds work proposed for {heads[target]}"
    else:
        return None
    return f"{target} {why}; use another topic, or delete it first: git push origin :{target}"


def note_target(env, ref, refname):
    """Tell the platform which branch a nameless push was for (a topic ref's name does not say):
    an `option hostsite.for=<workspace ref> <branch>` line in the updates file, which
    post-receive never lets a client write. Change proposals opened with -o title= use it."""
    updates_file = env.get("HOSTSITE_REF_UPDATES_FILE")
    if not updates_file:
        return
    branch, _topic = split_target(refspace.for_target(ref))
    if branch:
        with open(updates_file, "a", encoding="utf-8") as fh:
            fh.write(f"option hostsite.for={refname} {branch}\n")
