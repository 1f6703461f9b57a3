# Nameless push: `git push origin HEAD:refs/for/<branch>[/<topic>]` (or with -o topic=<name>)
# lands in the pusher's workspace under a name the server picks. A push that fast-forwards one
# of the pusher's live nameless heads for the same branch advances it (nameless_head); any other
# work gets a ref of its own. Imported by proc-receive only when a push names refs/for/.
# Standalone: no Django, no project imports (see repos/hooks/__init__.py).
import re

from hookgit import ZERO, is_ancestor, is_zero, run
from refcas import Plan

SHORT = 12
_TOPIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# A nameless head's last component: the commit it was created at, abbreviated (longer when 12
# digits are ambiguous), and a number when that name was taken.
_NAMELESS = re.compile(r"^[0-9a-f]{12,64}(?:-[0-9]+)?$")
MAX_SAME_NAME = 100


def ref_exists(ref):
    return run("show-ref", "--verify", "--quiet", ref).returncode == 0


def split_target(rest):
    """refs/for/<branch>[/<topic>]: the longest existing branch wins (branches contain '/')."""
    parts = rest.split("/")
    for cut in range(len(parts), 0, -1):
        branch = "/".join(parts[:cut])
        if ref_exists(f"refs/heads/{branch}"):
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
            f"deleting through refs/for/ is not possible; delete the workspace ref: "
            f"git push origin :refs/users/{pusher}/<name>",
        )
    branch, topic = split_target(ref[len("refs/for/") :])
    if branch is None:
        return Plan.refused(
            ref, f"no branch {topic!r} to propose work for; push to refs/for/<existing branch>"
        )
    if is_ancestor(new, f"refs/heads/{branch}"):
        # A head at a commit the branch has would be merged work from the start, and every
        # later push on top of the branch would descend from it.
        return Plan.refused(
            ref, f"no new changes: {new[:SHORT]} is already on {branch}; commit your work and push again"
        )
    topic = options.get("topic") or topic
    prefix = f"refs/users/{pusher}/"
    if topic:
        if not _TOPIC.match(topic):
            return Plan.refused(ref, f"invalid topic {topic!r}: letters, digits, '.', '_' and '-'")
        target = f"{prefix}{topic}"
        current = run("rev-parse", "--verify", "--quiet", target).stdout.strip() or ZERO
        refusal = retired_topic(target, current, branch, heads, restored)
        if refusal:
            return Plan.refused(ref, refusal)
    else:
        target, current = nameless_target(new, branch, f"{prefix}{branch}/", heads, restored)
        if target is None:
            return Plan.refused(ref, f"too many workspace refs named after {new[:SHORT]}; delete some")
    if is_zero(current):
        count = run("for-each-ref", "--format=x", prefix).stdout.count("\n")  # exact: git runs anyway
        if count >= limit:
            return Plan.refused(
                ref,
                f"your workspace already holds {limit} refs, the limit; delete some with "
                f"git push origin :refs/users/{pusher}/<name>",
            )
    forced = not is_zero(current) and current != new and not is_ancestor(current, new)
    return Plan(ref, target, current, new, forced, f"hostsite: nameless push by {pusher} to {ref}")


def nameless_target(new, branch, base, heads, restored):
    """(ref, its current tip or ZERO) for a nameless push of `new` for `branch`: the nameless
    head it builds on, or else a fresh name under `base` (refs/users/<pusher>/<branch>/)."""
    head = nameless_head(new, branch, base, heads, restored)
    if head:
        return head
    short = run("rev-parse", f"--short={SHORT}", new).stdout.strip()
    # The name is taken by a head that may not advance (restored, merged, or other work):
    # a numbered name beside it, never that ref.
    taken = set(run("for-each-ref", "--format=%(refname)", f"{base}{short}*").stdout.split())
    for n in range(1, MAX_SAME_NAME + 1):
        name = f"{base}{short}" + (f"-{n}" if n > 1 else "")
        if name not in taken:
            return name, ZERO
    return None, ZERO


def nameless_head(new, branch, base, heads, restored):
    """The pusher's nameless head for `branch` that `new` fast-forwards, as (ref, tip), or None.
    Candidates: refs named `<base><hex>[-<n>]` that nameless pushes for this branch wrote
    (a plain push may use such a name too), that hold work the branch lacks (a merged head
    would capture every later push built on the branch), and that were not restored after
    merged-ref cleanup archived them (their work landed). Topic refs live outside `base`."""
    listed = run(
        "for-each-ref",
        "--sort=-committerdate",
        "--format=%(refname) %(objectname)",
        f"--no-merged=refs/heads/{branch}",
        base,
    ).stdout
    for line in listed.splitlines():
        head_ref, head_sha = line.split(" ", 1)
        if (
            not _NAMELESS.match(head_ref[len(base) :])
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
    elif is_ancestor(current, f"refs/heads/{branch}"):
        why = f"holds work already on {branch}"
    elif heads.get(target, branch) != branch:
        why = f"holds work proposed for {heads[target]}"
    else:
        return None
    return f"{target} {why}; use another topic, or delete it first: git push origin :{target}"


def note_target(ref, refname):
    """Tell the platform which branch a nameless push was for (a topic ref's name does not say):
    an `option hostsite.for=<workspace ref> <branch>` line in the updates file, which
    post-receive never lets a client write. Change proposals opened with -o title= use it."""
    import os

    updates_file = os.environ.get("HOSTSITE_REF_UPDATES_FILE")
    if not updates_file:
        return
    branch, _topic = split_target(ref[len("refs/for/") :])
    if branch:
        with open(updates_file, "a", encoding="utf-8") as fh:
            fh.write(f"option hostsite.for={refname} {branch}\n")
