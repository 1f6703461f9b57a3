# post-receive: write the accepted ref updates where the web view will read them after git
# exits. Standalone: no Django, no project imports (see repos/hooks/__init__.py).
import os
import sys


def main() -> int:
    target = os.environ.get("HOSTSITE_REF_UPDATES_FILE")
    data = sys.stdin.read()
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
