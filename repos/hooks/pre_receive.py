# pre-receive: the platform's gate for every ref update. Standalone: no Django, no project
# imports (see repos/hooks/__init__.py).
import os
import sys


def main() -> int:
    if not os.environ.get("HOSTSITE_PUSHER"):
        # Only hostsite's HTTP endpoint sets HOSTSITE_PUSHER; anything else (a shell on the
        # server, a misconfigured daemon) must not bypass the policy.
        sys.stderr.write("hostsite: pushes must go through hostsite's HTTP endpoint\n")
        return 1
    if os.environ.get("HOSTSITE_CAN_WRITE") != "1":
        for line in sys.stdin:
            parts = line.split()
            if len(parts) == 3:
                sys.stderr.write(f"hostsite: you need write access to push to {parts[2]}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
