# post-receive: write the accepted ref updates where the web view will read them after git
# exits. Standalone: no Django, no project imports (see repos/hooks/__init__.py).
import os
import sys

# Push options (`git push -o key=value`) follow the updates as `option <key=value>` lines; they
# come from the client, so they are bounded here and checked again by whoever reads them.
MAX_OPTIONS = 32
MAX_OPTION_CHARS = 8192
# Lines the server itself writes (proc-receive's `option hostsite.for=...`): never the client's.
RESERVED = "hostsite."


def push_options(env) -> list:
    try:
        count = int(env.get("GIT_PUSH_OPTION_COUNT") or 0)
    except ValueError:
        count = 0
    options = []
    for i in range(min(max(count, 0), MAX_OPTIONS)):
        value = env.get(f"GIT_PUSH_OPTION_{i}", "")
        # Every character str.splitlines() breaks on goes, or an option could forge a ref update line.
        value = "".join(" " if c < " " or "\x7f" <= c <= "\x9f" or c in "\u2028\u2029" else c
                        for c in value)[:MAX_OPTION_CHARS]
        if value and not value.startswith(RESERVED):
            options.append(value)
    return options


def main() -> int:
    target = os.environ.get("HOSTSITE_REF_UPDATES_FILE")
    data = sys.stdin.read()
    options = push_options(os.environ)
    if target:
        with open(target, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(data)
            fh.writelines(f"option {option}\n" for option in options)
    notice = os.environ.get("HOSTSITE_PUSH_OPTIONS_NOTICE")
    if options and notice:
        print(f"hostsite: {notice}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
