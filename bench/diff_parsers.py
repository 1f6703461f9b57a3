"""render.diffs' parser vs unidiff, on what git emits and on a large real diff.

Correctness: a repository with one commit holding the cases git's patch format has (a rename
with an edit, a copy, a mode change, binary, no newline at end, paths with spaces, a tab, a
quote, non-UTF-8 bytes and non-ASCII letters, content lines that look like headers). Each
parser's files are checked against git's own --raw and --numstat output for the same diff
(paths, status, old/new modes, binary, added and deleted lines).

Speed: both parsers on the same bytes, the diff from this project's first commit to HEAD
(or --base/--head in --repo), median of --rounds.

    .venv/bin/python -m bench.diff_parsers [--repo PATH --base REV --head REV] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import unidiff

from bench.harness.common import BASE_DIR, base_env, say
from render import diffs  # its parser reads bytes only: no django.setup()

# gitcore.gitdiff.diff's own arguments, so both parsers see exactly what pages parse.
DIFF_ARGS = ["-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"]
DIFF_ARGS += ["--src-prefix=a/", "--dst-prefix=b/", "--patch", "--find-copies"]


def git(repo: Path, *args: str | bytes, input: bytes | None = None) -> bytes:
    env = {**base_env(), "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    env.update({"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b"})
    env["GIT_COMMITTER_EMAIL"] = "b@x"
    return subprocess.run(
        ["git", "-C", repo, *args], env=env, input=input, capture_output=True, check=True
    ).stdout


def fixture(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    root = bytes(repo)
    files = {
        b"moved.txt": b"".join(b"line %d\n" % i for i in range(40)),
        b"source.txt": b"".join(b"copied %d\n" % i for i in range(40)),
        b"tool.sh": b"echo hi\n",
        b"image.bin": bytes(range(256)) * 4,
        b"tail.txt": b"no newline",
        b"dir with space/file name.txt": b"a\nb\n",
        b'tab\tand"quote.txt': b"x\n",
        b"caf\xe9.txt": b"latin-1 name\n",
        "données.txt".encode(): b"un\n",
        b"headers.txt": b"-- x\n+++ y\n--- z\nkeep\n",
        b"gone.txt": b"bye\n",
    }
    for name, data in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")

    def edit(name: bytes, data: bytes) -> None:
        with open(os.path.join(root, name), "wb") as fh:
            fh.write(data)

    git(repo, "mv", "moved.txt", "renamed.txt")
    edit(b"renamed.txt", files[b"moved.txt"].replace(b"line 20\n", b"line twenty\n"))
    edit(b"copy.txt", files[b"source.txt"].replace(b"copied 3\n", b"copied three\n"))
    # --find-copies takes a copy's source among the files the commit modifies.
    edit(b"source.txt", files[b"source.txt"] + b"appended\n")
    edit(b"image.bin", bytes(reversed(range(256))) * 4)
    edit(b"tail.txt", b"still no newline")
    edit(b"dir with space/file name.txt", b"a\nB\n")
    edit(b'tab\tand"quote.txt', b"y\n")
    edit(b"caf\xe9.txt", b"latin-1 name, edited\n")
    edit("données.txt".encode(), b"deux\n")
    edit(b"headers.txt", b"+++ y\n-- w\nkeep\n--- z\n")
    os.remove(os.path.join(root, b"gone.txt"))
    edit(b"new.txt", b"fresh\n")
    git(repo, "add", "-A")
    git(repo, "update-index", "--chmod=+x", "tool.sh")  # the mode change, in the index alone
    git(repo, "commit", "-qm", "cases")


def truth(repo: Path, base: str, head: str) -> dict[str, dict]:
    """git's own account of the diff, by new path (old path for a deletion)."""
    flags = ["-c", "core.quotePath=false", "diff", "-z", "-M", "--find-copies", base, head]
    raw = git(repo, *flags[:-2], "--raw", base, head).split(b"\0")
    numstat = git(repo, *flags[:-2], "--numstat", base, head).split(b"\0")
    out: dict[str, dict] = {}
    i = 0
    while i < len(raw) - 1:
        meta = raw[i].decode().lstrip(":").split()
        status = meta[4][0]
        paths = [raw[i + 1]] + ([raw[i + 2]] if status in "RC" else [])
        i += 1 + len(paths)
        name = paths[-1].decode("utf-8", "replace")
        out[name] = {
            "status": {
                "A": "added",
                "D": "deleted",
                "M": "modified",
                "R": "renamed",
                "C": "copied",
                "T": "modified",
            }[status],
            "old_path": None if status == "A" else paths[0].decode("utf-8", "replace"),
            "new_path": None if status == "D" else name,
            "old_mode": None if status == "A" else meta[0],
            "new_mode": None if status == "D" else meta[1],
        }
    j = 0
    while j < len(numstat) - 1:
        adds, dels, path = numstat[j].decode("utf-8", "replace").split("\t", 2)
        if path == "":  # a rename or copy: the two paths follow
            path = numstat[j + 2].decode("utf-8", "replace")
            j += 2
        j += 1
        out[path].update(
            binary=adds == "-",
            additions=int(adds) if adds != "-" else 0,
            deletions=int(dels) if dels != "-" else 0,
        )
    return out


def ours(raw: bytes) -> dict[str, dict]:
    files, _ = diffs.parse(raw, 10**9, 10**9, False)
    return {
        f.path: {
            "status": f.status,
            "old_path": f.old_path,
            "new_path": f.new_path,
            "old_mode": f.old_mode,
            "new_mode": f.new_mode,
            "binary": f.binary,
            "additions": f.additions,
            "deletions": f.deletions,
        }
        for f in files
    }


def theirs(raw: bytes) -> dict[str, dict]:
    out = {}
    for f in unidiff.PatchSet(raw.decode("utf-8", "replace")):
        old = None if f.is_added_file else f.source_file.removeprefix("a/")
        new = None if f.is_removed_file else f.target_file.removeprefix("b/")
        status = (
            "added"
            if f.is_added_file
            else "deleted"
            if f.is_removed_file
            else "renamed"
            if f.is_rename
            else "modified"
        )
        modes = [
            line.rstrip().rsplit(" ", 1)[1]
            for line in f.patch_info
            if line.startswith(("old mode", "new mode", "new file mode", "deleted file mode"))
        ]
        index_mode = [
            line.rstrip().rsplit(" ", 1)[1]
            for line in f.patch_info
            if line.startswith("index ") and line.count(" ") == 2
        ]
        old_mode = None if f.is_added_file else (modes[0] if modes else (index_mode or [None])[0])
        new_mode = None if f.is_removed_file else (modes[-1] if modes else (index_mode or [None])[0])
        out[new if new is not None else old or ""] = {
            "status": status,
            "old_path": old,
            "new_path": new,
            "old_mode": old_mode,
            "new_mode": new_mode,
            "binary": f.is_binary_file,
            "additions": f.added,
            "deletions": f.removed,
        }
    return out


def score(name: str, got: dict[str, dict], want: dict[str, dict]) -> int:
    wrong = 0
    for path, expected in want.items():
        found = got.get(path)
        bad = (
            "missing"
            if found is None
            else ", ".join(f"{k}={found[k]!r} (git: {v!r})" for k, v in expected.items() if found[k] != v)
        )
        if bad:
            wrong += 1
            print(f"  {name:8} {path!r}: {bad}")
    return wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=BASE_DIR)
    parser.add_argument("--base", help="default: the repository's first commit")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="diff-bench-") as tmp:
        repo = Path(tmp) / "cases"
        repo.mkdir()
        fixture(repo)
        raw = git(repo, *DIFF_ARGS, "HEAD~1", "HEAD")
        want = truth(repo, "HEAD~1", "HEAD")
        say(f"correctness: {len(want)} files in the cases diff")
        wrong = {
            "hostsite": score("hostsite", ours(raw), want),
            "unidiff": score("unidiff", theirs(raw), want),
        }

    base = args.base or git(args.repo, "rev-list", "--max-parents=0", args.head).split()[-1].decode()
    big = git(args.repo, *DIFF_ARGS, base, args.head)
    nfiles = big.count(b"\ndiff --git ") + 1
    say(f"speed: {len(big) / 2**20:.1f} MiB of patch, {nfiles} files")
    timings: dict[str, list[float]] = {"hostsite": [], "unidiff": []}
    for _ in range(args.rounds):
        for name, parse in (("hostsite", ours), ("unidiff", theirs)):
            start = time.perf_counter()
            parse(big)
            timings[name].append(time.perf_counter() - start)
    print(f"{'parser':10} {'wrong files':>12} {'median s':>9}")
    for name in timings:
        print(f"{name:10} {wrong[name]:>5} of {len(want):<5} {statistics.median(timings[name]):9.3f}")
    ratio = statistics.median(timings["unidiff"]) / statistics.median(timings["hostsite"])
    print(f"unidiff / hostsite time: {ratio:.2f}")


if __name__ == "__main__":
    main()
