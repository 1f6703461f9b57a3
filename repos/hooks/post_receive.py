# post-receive: make the accepted ref updates durable before git tells the client it is done,
# so a push that moved refs is recorded even if the database is down or the web worker dies
# (the web process records the file after git exits; repos.push_spool replays what is left).
# Standalone: no Django, no project imports beyond failsafe.py and refspace.py, installed next
# to them (see repos/hooks/__init__.py).
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import failsafe
import refspace

# Push options (`git push -o key=value`) follow the updates as `option <key=value>` lines; they
# come from the client, so they are bounded here and checked again by whoever reads them.
MAX_OPTIONS = 32
MAX_OPTION_CHARS = 8192
# Lines the server itself writes (proc-receive's `option hostsite.for=...`): never the client's.
RESERVED = "hostsite."
SPOOL_VERSION = 1
_HEX = frozenset("0123456789abcdef")


def is_spool_id(text: str) -> bool:
    return len(text) == 32 and set(text) <= _HEX


def to_json(value) -> str:
    """JSON as json.dumps writes it (ASCII only), for the few types a record holds. Written by
    hand: importing json (and re with it) would cost this hook more than all it does."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        out = []
        for ch in value:
            code = ord(ch)
            if ch in '"\\':
                out.append("\\" + ch)
            elif 0x20 <= code < 0x7F:
                out.append(ch)
            elif code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        return '"' + "".join(out) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{to_json(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def push_options(env) -> list:
    try:
        count = int(env.get("GIT_PUSH_OPTION_COUNT") or 0)
    except ValueError:
        count = 0
    options = []
    for i in range(min(max(count, 0), MAX_OPTIONS)):
        value = env.get(f"GIT_PUSH_OPTION_{i}", "")
        # Every character str.splitlines() breaks on goes, or an option could forge a ref update line.
        value = "".join(" " if c < " " or "\x7f" <= c <= "\x9f" or c in "\u2028\u2029" else c for c in value)[
            :MAX_OPTION_CHARS
        ]
        if value and not value.startswith(RESERVED):
            options.append(value)
    return options


def server_options(updates_file) -> list:
    """The `option hostsite.*` lines proc-receive wrote into the updates file before us."""
    if not updates_file:
        return []
    try:
        with open(updates_file, encoding="utf-8", errors="replace") as fh:
            return [
                line[len("option ") :].rstrip("\n") for line in fh if line.startswith("option " + RESERVED)
            ]
    except OSError:
        return []


def spool_record(env, data: str, options: list) -> dict:
    updates = [line.split(" ", 2) for line in data.splitlines() if line.count(" ") >= 2]
    try:
        pusher_id = int(env.get("HOSTSITE_PUSHER_ID") or 0) or None
        writer_pid = int(env.get("HOSTSITE_SPOOL_WRITER_PID") or 0) or None
    except ValueError:
        pusher_id = writer_pid = None
    return {
        "version": SPOOL_VERSION,
        "id": env["HOSTSITE_PUSH_ID"],
        "repository_id": int(env.get("HOSTSITE_REPO_ID") or 0),
        "pusher": env.get("HOSTSITE_PUSHER", ""),
        "pusher_id": pusher_id,
        "protocol": env.get("HOSTSITE_PUSH_PROTOCOL") or "http",
        "updates": updates,
        "push_options": server_options(env.get("HOSTSITE_REF_UPDATES_FILE")) + options,
        "pushed_at": time.time(),
        "writer_pid": writer_pid,
        "writer_host": os.uname().nodename,
    }


def write_spool(directory: str, record: dict) -> str:
    """Write the record to `<directory>/<repository id>-<id>.json`: a temporary name, fsync'd, renamed into
    place and the directory fsync'd, so the file is either whole or absent after a crash."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    name = f"{record['repository_id']}-{record['id']}"
    final = os.path.join(directory, f"{name}.json")
    temporary = os.path.join(directory, f".{name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(to_json(record))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, final)
    except BaseException:
        try:  # noqa: SIM105 - contextlib would cost the hook an import
            os.unlink(temporary)
        except OSError:
            pass
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return final


# What to do next, after a push that landed in the pusher's own workspace (the web view passes
# the repository's absolute URL, its default branch and the open proposals the push may move,
# reviews.access): at most this many lines in all, proc-receive's "landed in" lines included.
NEXT_LINES = 4
_URL_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def quote(text: str, safe: str = "/") -> str:
    """Percent-encode as urllib.parse.quote does (without importing it): printable ASCII out."""
    keep = _URL_SAFE | frozenset(safe.encode())
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in text.encode("utf-8", "surrogateescape"))


def printable(text: str) -> str:
    """Text safe for the pusher's terminal: anything but printable ASCII shown as an escape."""
    return "".join(c if " " <= c <= "~" else f"\\u{ord(c):04x}" for c in text)


def open_proposals(env) -> dict:
    """source ref -> (number, latest revision number, its head), from HOSTSITE_NEXT_PROPOSALS."""
    found = {}
    for line in env.get("HOSTSITE_NEXT_PROPOSALS", "").splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[0].isdigit() and parts[1].isdigit():
            found[parts[3]] = (int(parts[0]), int(parts[1]), parts[2])
    return found


def ref_steps(ref, new, base, workspace, target, proposal, nameless, landed=False) -> list:
    """Lines for one workspace ref: its page, then its proposal or how to open one (or, when
    its tip is on the target already, that it is stale), then (for a nameless push) how to
    push to the name the server chose."""
    name = ref[len(refspace.WORKSPACES) :].partition("/")[2]
    lines = [f"hostsite: {printable(name)}: {workspace}/{quote(name)}"]
    if proposal is not None:
        number, revision, head = proposal
        url = f"{base}/proposals/{number}"
        if head == new:
            lines.append(
                f"hostsite: proposal #{number} is at this commit already: {url} (revision {revision})"
            )
        else:
            lines.append(f"hostsite: proposal #{number} updated: {url} (revision {revision + 1})")
    elif landed:
        # A `main` copy, typically: a proposal would be refused, and the copy never moves on.
        lines.append(
            f"hostsite: stale: already on {printable(target)}, nothing to propose; clean it up on that page"
        )
    else:
        lines.append(
            f"hostsite: open a proposal: {base}/proposals/new?ref={quote(ref)}&target={quote(target)}"
        )
    if nameless and printable(ref) == ref:
        lines.append(f"hostsite: push to it again: git push origin HEAD:{ref}")
    return lines


def next_steps(env, data: str, server: list, budget: int = NEXT_LINES) -> list:
    """The `remote:` lines telling the pusher where their work is and what to do with it."""
    base, pusher = env.get("HOSTSITE_NEXT_URL", ""), env.get("HOSTSITE_PUSHER", "")
    if not base or not pusher:
        return []
    own = refspace.workspace_prefix(pusher)
    default = env.get("HOSTSITE_NEXT_BRANCH") or "main"
    targets = {}  # nameless pushes: workspace ref -> branch (proc-receive's hostsite.for lines)
    for option in server:
        if option.startswith("hostsite.for="):
            ref, _, branch = option[len("hostsite.for=") :].partition(" ")
            targets[ref] = branch or default
    moved = []
    for line in data.splitlines():
        parts = line.split(" ", 2)
        if len(parts) != 3 or not parts[2].startswith(own) or len(parts[2]) == len(own):
            continue
        old, new, ref = parts
        if old != new and new.strip("0"):  # not deleted, and moved
            moved.append((ref, new))
    if not moved:
        return []
    proposals = open_proposals(env)
    # Tips already on the default branch (reviews.access computed them before git ran).
    landed = set(env.get("HOSTSITE_NEXT_LANDED", "").split())
    workspace = f"{base}/workspaces/{quote(pusher)}"
    # proc-receive printed one line per nameless ref, and one per branch push it mapped.
    mapped = env.get("HOSTSITE_NEXT_MAPPED", "")
    budget = max(1, budget - len(targets) - (int(mapped) if mapped.isdigit() else 0))
    out: list = []
    for i, (ref, new) in enumerate(moved):
        block = ref_steps(
            ref,
            new,
            base,
            workspace,
            targets.get(ref, default),
            proposals.get(ref),
            ref in targets,
            landed=ref not in targets and new in landed,
        )
        room = budget - len(out) - (1 if i + 1 < len(moved) else 0)
        if room <= 0 or (out and len(block) > room):
            rest = len(moved) - i
            out.append(
                f"hostsite: and {rest} more: {workspace}" if out else f"hostsite: {rest} refs: {workspace}"
            )
            break
        out += block[:room]
    return out


def why(exc: Exception) -> str:
    """An error in a few words for the pusher: never a path of the server (OSError's filename)."""
    return (exc.strerror if isinstance(exc, OSError) else None) or type(exc).__name__


def main() -> int:
    env = os.environ
    target = env.get("HOSTSITE_REF_UPDATES_FILE")
    # Bytes that are not UTF-8 (a ref name's) as U+FFFD, as the push log records such names
    # (gitcore.gittools.text_refname): a lone surrogate could not be stored, and the record with it.
    data = sys.stdin.buffer.read().decode("utf-8", "replace")
    options = push_options(env)
    spool_dir = env.get("HOSTSITE_PUSH_SPOOL_DIR")
    spooled = False
    if spool_dir and is_spool_id(env.get("HOSTSITE_PUSH_ID", "")) and data.strip():
        try:
            write_spool(spool_dir, spool_record(env, data, options))
            spooled = True
        except (OSError, ValueError) as exc:
            # The refs moved already; the web process still records from the updates file.
            print(f"hostsite: could not spool the record of this push ({why(exc)}); recording it directly")
    if target and not spooled:
        try:
            with open(target, "a", encoding="utf-8", errors="replace") as fh:
                fh.write(data)
                fh.writelines(f"option {option}\n" for option in options)
        except OSError as exc:
            # Reconciliation (repos.reconcile) finds the refs that moved without a record.
            print(
                f"hostsite: could not record this push now ({why(exc)}); the pushlog gets it at its next reconciliation"
            )
    notice = env.get("HOSTSITE_PUSH_OPTIONS_NOTICE")
    budget = NEXT_LINES
    if options and notice:
        print(f"hostsite: {notice}")
        budget -= 1
    try:
        steps = next_steps(env, data, server_options(target), budget)
    except Exception:  # the push is done: a hint must never make it look failed
        steps = []
    for line in steps:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(
        failsafe.run(
            main,
            "post-receive",
            "the push went through; if the pushlog lacks it, it gets it at its next reconciliation",
        )
    )
