# pre-receive: the platform's gate for every ref update. Standalone: no Django, no project
# imports beyond policy.py and updates.py, installed next to it (see repos/hooks/__init__.py). The web view
# decides who is pushing, their role and the repository's rules, and passes them in HOSTSITE_*
# variables; this script asks git only for what a rule needs (ancestry, ref counts).
# Imports are kept to the bare minimum: they are most of this hook's cost (bench/smart_http.py).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy
from updates import Update


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
        ["git", "for-each-ref", "--format=x", f"refs/users/{user}/"], capture_output=True, check=True
    ).stdout
    return out.count(b"\n")


def republished(updates) -> list[str]:
    """The refs of this push whose new history reaches content a moderator took down or hid
    from the pusher: only hidden refs reach it, and pointing a new ref at it (with an empty
    pack, or with the objects sent again) would publish it again. The web view passes the
    hidden ref prefixes only when the repository has any, so other pushes never get here.

    What a new tip reaches beyond the branches, tags and the pusher's own workspace is mostly
    what the push brings. Only the part of it that the repository already held before this
    push (outside the quarantine) can be hidden content, so the set of hidden objects is only
    computed, by the same walk as workspaces.visibility, when there is such a part (a push
    building on someone else's workspace, say): an ordinary push never pays for it."""
    prefixes = os.environ.get("HOSTSITE_HIDDEN_PREFIXES", "").split()
    if not prefixes:
        return []
    import subprocess

    excludes = [f"--exclude={prefix}*" for prefix in prefixes]
    # The repository as it was before the push: without the quarantine's object directory.
    before = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH")
    }
    # What each tip reaches beyond the branches, the tags and the pusher's own workspace (the
    # history a push builds on, listed by prefix: a walk `--not --all` would read every ref).
    # Anything else it reaches that the repository already held is checked below.
    own = subprocess.run(
        [
            "git",
            "for-each-ref",
            "--format=^%(objectname)",
            f"refs/users/{os.environ.get('HOSTSITE_PUSHER', '')}/",
        ],
        capture_output=True,
        check=False,
    ).stdout.decode("ascii", "replace")
    reached = {}
    for u in updates:
        if u.is_delete:
            continue
        walk = subprocess.run(
            ["git", "rev-list", "--objects", "--no-object-names", "--stdin", "--not", "--branches", "--tags"],
            input=f"{u.new}\n{own}".encode(),
            capture_output=True,
            check=False,
        )
        if walk.returncode != 0:
            return [u.ref]  # what cannot be walked cannot be shown to be clean
        reached[u.ref] = set(walk.stdout.decode("ascii", "replace").split())
    wanted = set().union(*reached.values()) if reached else set()
    if not wanted:
        return []
    check = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectname)"],
        env=before,
        capture_output=True,
        check=False,
        input="".join(f"{oid}\n" for oid in sorted(wanted)).encode(),
    )
    held = {
        line for line in check.stdout.decode("ascii", "replace").splitlines() if not line.endswith(" missing")
    }
    if not held:
        return []
    tips = (
        subprocess.run(
            ["git", "for-each-ref", "--format=%(objectname)", *prefixes],
            env=before,
            capture_output=True,
            check=False,
        )
        .stdout.decode("ascii", "replace")
        .split()
    )
    if not tips:
        return []
    closure = subprocess.run(
        [
            "git",
            "rev-list",
            "--objects",
            "--no-object-names",
            *sorted(set(tips)),
            "--not",
            *excludes,
            "--all",
        ],
        env=before,
        capture_output=True,
        check=False,
    )
    if closure.returncode != 0:
        return [ref for ref, objects in reached.items() if objects & held]
    hidden = held.intersection(closure.stdout.decode("ascii", "replace").split())
    return [ref for ref, objects in reached.items() if not objects.isdisjoint(hidden)]


def main() -> int:
    pusher = os.environ.get("HOSTSITE_PUSHER")
    if not pusher:
        # Only hostsite's HTTP endpoint sets HOSTSITE_PUSHER; anything else (a shell on the
        # server, a misconfigured daemon) must not bypass the policy.
        sys.stderr.write("hostsite: pushes must go through hostsite's HTTP endpoint\n")
        return 1
    updates = []
    for line in sys.stdin:
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) == 3:
            updates.append(Update(*parts))
    # Every policy has this entry point (repos/hooks/policy.py, or a git access backend's).
    reasons = policy.decide_all(
        role=os.environ.get("HOSTSITE_ROLE", ""),
        pusher=pusher,
        updates=updates,
        rules=policy.rules_from_env(os.environ),
        is_ancestor=is_ancestor,
        workspace_ref_count=workspace_ref_count,
    )
    if not reasons:
        reasons = [
            f"{ref}: this content was taken down or hidden by a moderator; it cannot be pushed again"
            for ref in republished(updates)
        ]
    for reason in reasons:
        sys.stderr.write(f"hostsite: {reason}\n")
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
