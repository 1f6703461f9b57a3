# pre-receive: the platform's gate for every ref update. Standalone: no Django, no project
# imports beyond pushpolicy.py, updates.py, contentguard.py and refspace.py, installed next to it (see
# repos/hooks/__init__.py). The web view decides who is pushing, their role and the
# repository's rules, and passes them in HOSTSITE_* variables; this script asks git only for
# what a rule needs (ancestry, ref counts, what new history reaches).
# Imports are kept to the bare minimum: they are most of this hook's cost (bench/smart_http.py).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import failsafe
import pushpolicy
import refspace
from refnames import judged_name
from updates import Update, is_zero


def is_ancestor(old: str, new: str) -> bool:
    # posix_spawnp, not subprocess: importing subprocess costs this hook more than git does.
    pid = os.posix_spawnp("git", ["git", "merge-base", "--is-ancestor", old, new], os.environ)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def workspace_ref_count(user: str) -> int:
    # Counted by the web view before git started, when the push creates workspace refs.
    counted = os.environ.get("HOSTSITE_WORKSPACE_REF_COUNT")
    if counted and counted.isdigit() and user == os.environ.get("HOSTSITE_PUSHER"):
        return int(counted)
    import subprocess

    out = subprocess.run(
        ["git", "for-each-ref", "--format=x", refspace.workspace_prefix(user)],
        capture_output=True,
        check=True,
    ).stdout
    return out.count(b"\n")


def blocked(updates) -> list[str]:
    """The refs of this push whose new history reaches content that may not be published again
    (contentguard.py): the commits of taken-down workspaces, and content staff blocked by id.
    The web view passes them only when the repository has any and the pusher is not staff, so
    other pushes never get here."""
    prefixes = os.environ.get("HOSTSITE_BLOCKED_PREFIXES", "").split()
    objects = os.environ.get("HOSTSITE_BLOCKED_OBJECTS", "").split()
    if not prefixes and not objects:
        return []
    import contentguard
    from hookgit import run

    # The repository as it was before the push: without the quarantine's object directory.
    unquarantined = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH")
    }

    def git(args, input=None, before=False):
        done = run(*args, input=input, env=unquarantined if before else None)
        return done.returncode, done.stdout

    return contentguard.refused_refs(
        updates,
        prefixes=prefixes,
        objects=objects,
        own_prefix=refspace.workspace_prefix(os.environ.get("HOSTSITE_PUSHER", "")),
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


def main() -> int:
    pusher = os.environ.get("HOSTSITE_PUSHER")
    if not pusher:
        # Only hostsite's HTTP endpoint sets HOSTSITE_PUSHER; anything else (a shell on the
        # server, a misconfigured daemon) must not bypass the policy.
        sys.stderr.write("hostsite: pushes must go through hostsite's HTTP endpoint\n")
        return 1
    updates, refused = read_updates(sys.stdin.buffer.read())
    if refused:
        for reason in refused:
            sys.stderr.write(f"hostsite: {reason}\n")
        return 1
    reasons = pushpolicy.decide_all(
        role=os.environ.get("HOSTSITE_ROLE", ""),
        pusher=pusher,
        updates=updates,
        rules=pushpolicy.rules_from_env(os.environ),
        is_ancestor=is_ancestor,
        workspace_ref_count=workspace_ref_count,
    )
    if not reasons:
        reasons = [
            f"{ref}: this push contains content a moderator took down or blocked; it cannot be published again"
            for ref in blocked(updates)
        ]
    for reason in reasons:
        sys.stderr.write(f"hostsite: {reason}\n")
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(failsafe.run(main, "pre-receive", "the push was refused and nothing changed"))
