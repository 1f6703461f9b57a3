# proc-receive: nameless push. `git push origin HEAD:refs/for/<branch>[/<topic>]` (or with
# -o topic=<name>) lands in the pusher's workspace under a name the server picks, and the
# client is told the real ref (`option refname`). Standalone: no Django, no project imports
# (see repos/hooks/__init__.py). Protocol: githooks(5), "proc-receive".
import os
import re
import subprocess
import sys

ZERO = "0" * 40
SHORT = 12
_TOPIC = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


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


def handle(old, new, ref, pusher, options, limit):
    """(status line, [option lines]) for one refs/for/ command."""
    if new == ZERO:
        return (f"ng {ref} deleting through refs/for/ is not possible; delete the workspace ref: "
                f"git push origin :refs/users/{pusher}/<name>"), []
    branch, topic = split_target(ref[len("refs/for/"):])
    if branch is None:
        return f"ng {ref} no branch {topic!r} to propose work for; push to refs/for/<existing branch>", []
    topic = options.get("topic") or topic
    prefix = f"refs/users/{pusher}/"
    if topic:
        if not _TOPIC.match(topic):
            return f"ng {ref} invalid topic {topic!r}: letters, digits, '.', '_' and '-'", []
        target = f"{prefix}{topic}"
    else:
        target = None
        # Advance an existing nameless head for this branch if the new commit descends from it.
        heads = git("for-each-ref", "--sort=-committerdate", "--format=%(refname) %(objectname)",
                    f"{prefix}{branch}/").stdout.split("\n")
        for line in heads:
            if not line:
                continue
            head_ref, head_sha = line.split(" ", 1)
            if is_ancestor(head_sha, new):
                target = head_ref
                break
        if target is None:
            short = git("rev-parse", f"--short={SHORT}", new).stdout.strip()
            target = f"{prefix}{branch}/{short}"
    current = git("rev-parse", "--verify", "--quiet", target, check=False).stdout.strip() or ZERO
    if current == ZERO:
        count = git("for-each-ref", "--format=x", prefix).stdout.count("\n")  # exact: proc-receive runs git anyway
        if count >= limit:
            return (f"ng {ref} your workspace already holds {limit} refs, the limit; delete some with "
                    f"git push origin :refs/users/{pusher}/<name>"), []
    if current == new:
        return f"ok {ref}", [f"option refname {target}", f"option old-oid {current}", f"option new-oid {new}"]
    # Compare-and-swap against what we just read: a concurrent push cannot be overwritten.
    result = git("update-ref", "-m", f"hostsite: nameless push by {pusher} to {ref}", target, new, current,
                 check=False)
    if result.returncode != 0:
        return f"ng {ref} {target} changed while pushing; push again", []
    lines = [f"option refname {target}", f"option old-oid {current}", f"option new-oid {new}"]
    if current != ZERO and not is_ancestor(current, new):
        lines.append("option forced-update")
    return f"ok {ref}", lines


def note_target(ref, status, extra):
    """Tell the platform which branch a nameless push was for (a topic ref's name does not say):
    an `option hostsite.for=<workspace ref> <branch>` line in the updates file, which
    post-receive never lets a client write. Change proposals opened with -o title= use it."""
    updates_file = os.environ.get("HOSTSITE_REF_UPDATES_FILE")
    refname = next((line[len("option refname "):] for line in extra if line.startswith("option refname ")), None)
    if not updates_file or not status.startswith("ok ") or not refname:
        return
    branch, _topic = split_target(ref[len("refs/for/"):])
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
            status, extra = handle(old, new, ref, pusher, options, limit)
        write_pkt(stdout, status)
        for line in extra:
            write_pkt(stdout, line)
        note_target(ref, status, extra)
        refname = next((line[len("option refname "):] for line in extra if line.startswith("option refname ")), "")
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
