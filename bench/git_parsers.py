"""gitcore.pktline and gitcore.gitobjects vs dulwich's pkt-line reader and object parsers.

pkt-line: hostile request bodies (each must be refused cleanly, so the view answers 400, or
read exactly as git reads it) through both readers, and the speed of reading a push's command
list of --commands commands. Objects: odd commits found in real histories through both
parsers, the speed of parsing every tree and commit of this project's history, read once
from `git cat-file --batch`, and of reading each object of that history one at a time through
a long-lived `git cat-file --batch` (as gitcore.catfile does) and through dulwich's object store.

    .venv/bin/python -m bench.git_parsers [--commands 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import time

from dulwich import objects as dobjects
from dulwich.errors import GitProtocolError, HangupException
from dulwich.protocol import Protocol
from dulwich.repo import Repo

from bench.harness.common import BASE_DIR, say
from gitcore import gitobjects, pktline
from repos.hooks import refspace

OID = "1" * 40

# (what, body, what git's packet reader does with it)
HOSTILE = [
    ("flush", b"0000", "flush"),
    ("empty packet", b"0004", "1 packet"),
    ("response-end (v2)", b"0002", "special"),
    ("not hex", b"zzzz", "refuse"),
    ("minus sign", b"-001abc", "refuse"),
    ("0x prefix", b"0x10" + b"a" * 12, "refuse"),
    ("underscore", b"0_10" + b"a" * 12, "refuse"),
    ("space", b" 010" + b"a" * 12, "refuse"),
    ("length 3", b"0003", "refuse"),
    ("non-ASCII header", b"\xff\xff\xff\xff", "refuse"),
    ("truncated header", b"00", "refuse"),
    ("truncated payload", b"0010abc", "refuse"),
    ("largest packet", b"fff0" + b"a" * 65516, "1 packet"),
    ("one byte too long", b"fff1" + b"a" * 65517, "refuse"),
    ("longest header", b"ffff" + b"a" * 65531, "refuse"),
]


def ours_pkts(body: bytes) -> str:
    try:
        packets = list(pktline.iter_pkts(io.BytesIO(body)))
    except pktline.PktLineError:
        return "refuse"
    except Exception as exc:  # a 500 in the view
        return f"CRASH {type(exc).__name__}"
    if len(packets) == 1 and packets[0][1] is None:
        return "flush" if packets[0][0] == pktline.FLUSH else "special"
    return f"{len(packets)} packet{'s' if len(packets) != 1 else ''}"


def dulwich_pkts(body: bytes) -> str:
    proto = Protocol(io.BytesIO(body).read, None)
    packets: list[bytes | None] = []
    try:
        while True:
            packets.append(proto.read_pkt_line())
    except HangupException:
        pass
    except GitProtocolError:
        return "refuse"
    except Exception as exc:
        return f"CRASH {type(exc).__name__}"
    if packets == [None]:
        return "flush"  # dulwich returns None for flush and delim alike
    return f"{len(packets)} packet{'s' if len(packets) != 1 else ''}"


def commands_body(n: int) -> bytes:
    lines = [pktline.encode(f"{OID} {OID} {refspace.workspace_ref(f'u{i}', 'topic')}\n") for i in range(n)]
    return b"".join(lines) + pktline.FLUSH


def time_pkts(body: bytes, rounds: int) -> dict[str, float]:
    def ours() -> None:
        for _ in pktline.iter_pkts(io.BytesIO(body)):
            pass

    def theirs() -> None:
        proto = Protocol(io.BytesIO(body).read, None)
        while proto.read_pkt_line() is not None:
            pass

    return {name: _median(fn, rounds) for name, fn in (("hostsite", ours), ("dulwich", theirs))}


def _median(fn, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
ODD_COMMITS = [
    ("plain", f"tree {TREE}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nmsg\n".encode()),
    (
        "latin-1 with encoding header",
        f"tree {TREE}\nauthor R\xe9mi <r@x> 1 +0000\ncommitter R <r@x> 1 +0000\nencoding ISO-8859-1\n\ncaf\xe9\n".encode(
            "latin-1"
        ),
    ),
    ("no author (early git)", f"tree {TREE}\ncommitter A <a@x> 1 +0000\n\nmsg\n".encode()),
    ("author without email", f"tree {TREE}\nauthor A 1 +0000\ncommitter A <a@x> 1 +0000\n\nmsg\n".encode()),
    (
        "two authors",
        f"tree {TREE}\nauthor A <a@x> 1 +0000\nauthor B <b@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\nmsg\n".encode(),
    ),
    (
        "unknown header",
        f"tree {TREE}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\nfrobnicate yes\n\nmsg\n".encode(),
    ),
    (
        "no blank line, no message",
        f"tree {TREE}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n".encode(),
    ),
    (
        "bad UTF-8, no encoding header",
        f"tree {TREE}\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n\n".encode() + b"\xff\xfe\n",
    ),
]


def ours_commit(data: bytes) -> str:
    try:
        c = gitobjects.parse_commit(data)
    except Exception as exc:
        return f"error {type(exc).__name__}"
    return f"ok, author {c.author.split('<')[0].strip()!r}, message {c.message.strip()!r}"


def dulwich_commit(data: bytes) -> str:
    try:
        c = dobjects.Commit.from_raw_string(dobjects.Commit.type_num, data)
        author, message = c.author, c.message  # parsed lazily: without check(), as a page would
    except Exception as exc:
        return f"error {type(exc).__name__}"
    author_name = author.split(b"<")[0].strip() if author is not None else None
    return f"ok, author {author_name!r}, message {message.strip() if message is not None else None!r}"


def _dulwich_tree(data: bytes) -> list[gitobjects.TreeItem]:
    """The items pages read, from dulwich's C tree parser: what a switch would run."""
    items = []
    for name, mode, sha in dobjects.parse_tree(data, 20):
        normal = f"{mode:06o}"
        items.append(gitobjects.TreeItem(normal, gitobjects._kind(normal), sha.decode(), name))
    return items


def history_objects() -> tuple[list[bytes], list[bytes]]:
    """Every commit and tree of this project's history, as cat-file --batch gives them."""
    ids = subprocess.run(
        ["git", "-C", BASE_DIR, "rev-list", "--objects", "HEAD"], capture_output=True, check=True
    )
    oids = b"\n".join(line.split(b" ")[0] for line in ids.stdout.splitlines()) + b"\n"
    out = subprocess.run(
        ["git", "-C", BASE_DIR, "cat-file", "--batch"], input=oids, capture_output=True, check=True
    ).stdout
    commits, trees, pos = [], [], 0
    while pos < len(out):
        header_end = out.index(b"\n", pos)
        _oid, kind, size = out[pos:header_end].split()
        body = out[header_end + 1 : header_end + 1 + int(size)]
        pos = header_end + 2 + int(size)
        if kind == b"commit":
            commits.append(body)
        elif kind == b"tree":
            trees.append(body)
    return commits, trees


def time_reads(rounds: int) -> dict[str, float]:
    """Every object of this project's history read one at a time, as pages read them: through a
    long-lived `git cat-file --batch` (what gitcore.catfile keeps), and from dulwich's object store."""
    out = subprocess.run(
        ["git", "-C", BASE_DIR, "rev-list", "--objects", "HEAD"], capture_output=True, check=True
    )
    oids = [line.split(b" ")[0] for line in out.stdout.splitlines()]
    git_dir = subprocess.run(
        ["git", "-C", BASE_DIR, "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout.strip()
    say(f"timing: {len(oids)} objects read one by one")

    def catfile() -> None:
        with subprocess.Popen(
            ["git", "--git-dir", git_dir, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        ) as proc:
            assert proc.stdin is not None and proc.stdout is not None
            for oid in oids:
                proc.stdin.write(oid + b"\n")
                proc.stdin.flush()
                size = int(proc.stdout.readline().split()[2])
                proc.stdout.read(size + 1)
            proc.stdin.close()

    def dulwich() -> None:
        with Repo(git_dir) as repo:
            for oid in oids:
                repo.object_store[oid].as_raw_string()

    return {"hostsite": _median(catfile, rounds), "dulwich": _median(dulwich, rounds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    print(f"{'pkt-line body':22} {'git':9} {'hostsite':12} dulwich")
    differ = {"hostsite": 0, "dulwich": 0}
    for what, body, git in HOSTILE:
        mine, theirs = ours_pkts(body), dulwich_pkts(body)
        differ["hostsite"] += mine != git
        differ["dulwich"] += theirs != git
        print(f"{what:22} {git:9} {mine:12} {theirs}")
    print(
        f"reads differently from git: hostsite {differ['hostsite']} of {len(HOSTILE)}, dulwich {differ['dulwich']}"
    )

    print(f"\n{'commit':30} hostsite / dulwich")
    for what, data in ODD_COMMITS:
        print(f"{what:30} {ours_commit(data)}\n{'':30} {dulwich_commit(data)}")

    body = commands_body(args.commands)
    say(f"timing: {args.commands} push commands, {len(body) / 2**20:.1f} MiB")
    pkts = time_pkts(body, args.rounds)
    commits, trees = history_objects()
    say(f"timing: {len(commits)} commits and {len(trees)} trees of this project")
    parse = {
        "hostsite": (
            lambda: [gitobjects.parse_commit(c) for c in commits],
            lambda: [gitobjects.parse_tree(t, 20) for t in trees],
        ),
        "dulwich": (
            lambda: [dobjects.Commit.from_raw_string(1, c).message for c in commits],
            lambda: [_dulwich_tree(t) for t in trees],
        ),
    }
    print(f"\n{'parser':10} {'pkt-lines s':>12} {'commits s':>10} {'trees s':>8}")
    times = {}
    for name, (commit_fn, tree_fn) in parse.items():
        times[name] = (pkts[name], _median(commit_fn, args.rounds), _median(tree_fn, args.rounds))
        print(f"{name:10} {times[name][0]:12.3f} {times[name][1]:10.3f} {times[name][2]:8.3f}")
    ratios = [d / h for h, d in zip(times["hostsite"], times["dulwich"], strict=True)]
    print(
        f"dulwich / hostsite time: pkt-lines {ratios[0]:.2f}, commits {ratios[1]:.2f}, trees {ratios[2]:.2f}"
    )
    reads = time_reads(args.rounds)
    print(
        f"reading objects: cat-file --batch {reads['hostsite']:.2f} s, dulwich's object store {reads['dulwich']:.2f} s"
    )
    print(f"dulwich / cat-file time: {reads['dulwich'] / reads['hostsite']:.2f}")


if __name__ == "__main__":
    main()
