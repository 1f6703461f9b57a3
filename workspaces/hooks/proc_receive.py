# proc-receive: nameless push. `git push origin HEAD:refs/for/<branch>[/<topic>]` (or with
# -o topic=<name>) lands in the pusher's workspace under a name the server picks, and the
# client is told the real ref (`option refname`). A push that fast-forwards one of the
# pusher's live nameless heads for the same branch advances it (nameless_head); any other work
# gets a ref of its own. Standalone: no Django, no project imports (see
# repos/hooks/__init__.py). Protocol: githooks(5), "proc-receive".
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from updates import ZERO_OID as ZERO  # installed beside this hook (repos.storage.install_hooks)
from updates import is_zero

SHORT = 12
_TOPIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# A nameless head's last component: the commit it was created at, abbreviated (longer when 12
# digits are ambiguous), and a number when that name was taken.
_NAMELESS = re.compile(r"^[0-9a-f]{12,64}(?:-[0-9]+)?$")
MAX_SAME_NAME = 100


def read_pkt(stream):
    header = stream.read(4)
    if len(header) < 4:
        raise EOFError
    length = int(header, 16)
    if length == 0:
        return None
    return stream.read(length - 4)


def read_section(stream):
    lines = []
    while True:
        payload = read_pkt(stream)
        if payload is None:
            return lines
        lines.append(payload)


def write_pkt(stream, text):
    data = text.encode() if isinstance(text, str) else text
    stream.write(f"{len(data) + 4:04x}".encode() + data)


def git(*args, check=True):
    return subprocess.run(["git", *args], capture_output=True, text=True, check=check)


def ref_exists(ref):
    return git("show-ref", "--verify", "--quiet", ref, check=False).returncode == 0


def is_ancestor(a, b):
    return git("merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def split_target(rest):
    """refs/for/<branch>[/<topic>]: the longest existing branch wins (branches contain '/')."""
    parts = rest.split("/")
    for cut in range(len(parts), 0, -1):
        branch = "/".join(parts[:cut])
        if ref_exists(f"refs/heads/{branch}"):
            return branch, "/".join(parts[cut:])
    return None, rest


def handle(old, new, ref, pusher, options, limit, heads=None, restored=frozenset()):
    """(status line, [option lines]) for one refs/for/ command. `heads`: the refs nameless
    pushes wrote, with their branch; `restored`: refs restored after their work landed (both
    from the web view, workspaces.nameless)."""
    heads = heads or {}
    if is_zero(new):
        return (
            f"ng {ref} deleting through refs/for/ is not possible; delete the workspace ref: "
            f"git push origin :refs/users/{pusher}/<name>"
        ), []
    branch, topic = split_target(ref[len("refs/for/") :])
    if branch is None:
        return f"ng {ref} no branch {topic!r} to propose work for; push to refs/for/<existing branch>", []
    if is_ancestor(new, f"refs/heads/{branch}"):
        # A head at a commit the branch has would be merged work from the start, and every
        # later push on top of the branch would descend from it.
        return (
            f"ng {ref} no new changes: {new[:SHORT]} is already on {branch}; commit your work and push again"
        ), []
    topic = options.get("topic") or topic
    prefix = f"refs/users/{pusher}/"
    if topic:
        if not _TOPIC.match(topic):
            return f"ng {ref} invalid topic {topic!r}: letters, digits, '.', '_' and '-'", []
        target = f"{prefix}{topic}"
        current = git("rev-parse", "--verify", "--quiet", target, check=False).stdout.strip() or ZERO
        refusal = retired_topic(ref, target, current, branch, heads, restored)
        if refusal:
            return refusal, []
    else:
        target, current = nameless_target(new, branch, f"{prefix}{branch}/", heads, restored)
        if target is None:
            return f"ng {ref} too many workspace refs named after {new[:SHORT]}; delete some", []
    if is_zero(current):
        count = git("for-each-ref", "--format=x", prefix).stdout.count(
            "\n"
        )  # exact: proc-receive runs git anyway
        if count >= limit:
            return (
                f"ng {ref} your workspace already holds {limit} refs, the limit; delete some with "
                f"git push origin :refs/users/{pusher}/<name>"
            ), []
    if current == new:
        return f"ok {ref}", [f"option refname {target}", f"option old-oid {current}", f"option new-oid {new}"]
    # Compare-and-swap against what we just read: a concurrent push cannot be overwritten.
    result = git(
        "update-ref", "-m", f"hostsite: nameless push by {pusher} to {ref}", target, new, current, check=False
    )
    if result.returncode != 0:
        return f"ng {ref} {target} changed while pushing; push again", []
    lines = [f"option refname {target}", f"option old-oid {current}", f"option new-oid {new}"]
    if not is_zero(current) and not is_ancestor(current, new):
        lines.append("option forced-update")
    return f"ok {ref}", lines


def nameless_target(new, branch, base, heads, restored):
    """(ref, its current tip or ZERO) for a nameless push of `new` for `branch`: the nameless
    head it builds on, or else a fresh name under `base` (refs/users/<pusher>/<branch>/)."""
    head = nameless_head(new, branch, base, heads, restored)
    if head:
        return head
    short = git("rev-parse", f"--short={SHORT}", new).stdout.strip()
    # The name is taken by a head that may not advance (restored, merged, or other work):
    # a numbered name beside it, never that ref.
    taken = set(git("for-each-ref", "--format=%(refname)", f"{base}{short}*").stdout.split())
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
    listed = git(
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


def retired_topic(ref, target, current, branch, heads, restored):
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
    return f"ng {ref} {target} {why}; use another topic, or delete it first: git push origin :{target}"


def note_target(ref, status, extra):
    """Tell the platform which branch a nameless push was for (a topic ref's name does not say):
    an `option hostsite.for=<workspace ref> <branch>` line in the updates file, which
    post-receive never lets a client write. Change proposals opened with -o title= use it."""
    updates_file = os.environ.get("HOSTSITE_REF_UPDATES_FILE")
    refname = next(
        (line[len("option refname ") :] for line in extra if line.startswith("option refname ")), None
    )
    if not updates_file or not status.startswith("ok ") or not refname:
        return
    branch, _topic = split_target(ref[len("refs/for/") :])
    if branch:
        with open(updates_file, "a", encoding="utf-8") as fh:
            fh.write(f"option hostsite.for={refname} {branch}\n")


def main() -> int:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    pusher = os.environ.get("HOSTSITE_PUSHER", "")
    try:
        limit = int(os.environ.get("HOSTSITE_WORKSPACE_REF_LIMIT", "1000"))
    except ValueError:
        limit = 1000
    # From the database (workspaces.nameless): which refs nameless pushes wrote, for which
    # branch, and which were restored after their work landed.
    restored = frozenset(os.environ.get("HOSTSITE_RESTORED_REFS", "").split())
    heads = dict(item.rpartition(":")[::2] for item in os.environ.get("HOSTSITE_NAMELESS_HEADS", "").split())
    # Version negotiation: ask for push options (-o topic=...).
    first = read_section(stdin)
    caps = first[0].split(b"\0", 1)[1].decode() if first and b"\0" in first[0] else ""
    want_options = "push-options" in caps.split()
    write_pkt(stdout, "version=1\0" + ("push-options" if want_options else ""))
    stdout.write(b"0000")
    stdout.flush()
    commands = [line.decode().rstrip("\n").split(" ", 2) for line in read_section(stdin)]
    options = {}
    if want_options:
        for raw in read_section(stdin):
            key, _, value = raw.decode("utf-8", "replace").rstrip("\n").partition("=")
            options[key] = value
    for old, new, ref in commands:
        if not pusher:
            status, extra = f"ng {ref} pushes must go through hostsite's HTTP endpoint", []
        else:
            status, extra = handle(old, new, ref, pusher, options, limit, heads, restored)
        write_pkt(stdout, status)
        for line in extra:
            write_pkt(stdout, line)
        note_target(ref, status, extra)
        refname = next(
            (line[len("option refname ") :] for line in extra if line.startswith("option refname ")), ""
        )
        if status.startswith("ok ") and refname:
            # Only report-status-v2 carries `option refname`, and libgit2 and dulwich speak v1:
            # their users learn the name from this `remote:` line (tests/repos/test_other_clients.py).
            sys.stderr.write(f"hostsite: {ref} landed in {refname}\n")
            sys.stderr.flush()
    stdout.write(b"0000")
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
