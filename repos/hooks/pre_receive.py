# pre-receive: the platform's gate for every ref update. Standalone: no Django, no project
# imports beyond policy.py, which is installed next to it (see repos/hooks/__init__.py).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import policy


def main() -> int:
    pusher = os.environ.get("HOSTSITE_PUSHER")
    if not pusher:
        # Only hostsite's HTTP endpoint sets HOSTSITE_PUSHER; anything else (a shell on the
        # server, a misconfigured daemon) must not bypass the policy.
        sys.stderr.write("hostsite: pushes must go through hostsite's HTTP endpoint\n")
        return 1
    role = os.environ.get("HOSTSITE_ROLE", "")
    refused = []
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 3:
            continue
        old, new, ref = parts
        reason = policy.decide(role=role, pusher=pusher, ref=ref, old=old, new=new)
        if reason:
            refused.append(reason)
    for reason in refused:
        sys.stderr.write(f"hostsite: {reason}\n")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
