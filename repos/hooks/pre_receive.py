# pre-receive: the platform's gate for every ref update. Standalone: no Django, no project
# imports beyond policy.py, installed next to it (see repos/hooks/__init__.py). The web view
# decides who is pushing, their role and the repository's rules, and passes them in HOSTSITE_*
# variables; this script asks git only for what a rule needs (ancestry, ref counts).
# Imports are kept to the bare minimum: they are most of this hook's cost (bench/smart_http.py).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy


class Update:
    __slots__ = ("new", "old", "ref")

    def __init__(self, old: str, new: str, ref: str):
        self.old, self.new, self.ref = old, new, ref

    @property
    def is_create(self):
        return set(self.old) == {"0"}

    @property
    def is_delete(self):
        return set(self.new) == {"0"}


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
    rules = policy.Rules.from_env(os.environ) if hasattr(policy, "Rules") else None
    reasons = policy.decide_all(
        role=os.environ.get("HOSTSITE_ROLE", ""), pusher=pusher, updates=updates, rules=rules,
        is_ancestor=is_ancestor, workspace_ref_count=workspace_ref_count,
    )
    for reason in reasons:
        sys.stderr.write(f"hostsite: {reason}\n")
    return 1 if reasons else 0


if __name__ == "__main__":
    sys.exit(main())
