"""Benchmark the fresh delta search that follows an import: which window and depth, and what it
saves against keeping a badly packed source's pack.

A benchmark, not a test: it prints a table and exits 0 unless the setup failed. Run from the
project root with the project's virtualenv:

    .venv/bin/python -m bench.packing                      # 40,000 generated commits
    .venv/bin/python -m bench.packing --commits 10000      # a quick look
    .venv/bin/python -m bench.packing --repo /path/to/git.git

What it does, under one temporary directory:

1. Generates a history with `git fast-import` (bench.harness.history's generator: source-like text
   files, a few lines edited per commit) or mirrors --repo.
2. Writes the "badly packed source": the same objects repacked with `--window=0`, no deltas at
   all, as a host that never runs a delta search serves them.
3. "Today": a mirror clone of that source, maintained as repos/maintenance.py did before
   (`repack -a -d -b --cruft`, which reuses the source's deltas: there are none).
4. "hostsite": `manage.py repo create --import` of the source, as an operator imports it (the
   import ends with the fresh delta search of repos/maintenance.py), timed.
5. For each --window x --depth: `repack -a -d -f -b --window=W --depth=D` of that clone, timed,
   then what readers pay: every object read back (`cat-file --batch-all-objects --batch`, the
   cost of resolving delta chains, which grows with depth), `git log -p` over the newest 2,000
   commits, and the bytes of a full clone (`pack-objects --all --stdout`, which reuses the
   stored deltas as upload-pack does).

Sizes are deterministic; times come from one run on a possibly shared machine, so compare the
ratios of one run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import (
    GIT,
    Git,
    add_run_options,
    client_env,
    history,
    hostsite_env,
    manage,
    run_benchmark,
    say,
)


def pack_size(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "objects" / "pack").glob("*.pack"))


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def read_all(git: Git, repo: Path) -> None:
    with open("/dev/null", "wb") as sink:
        subprocess.run(
            [GIT, "-C", str(repo), "cat-file", "--batch-all-objects", "--batch", "--unordered"],
            stdout=sink,
            env=git.env,
            check=True,
        )


def log_patch(git: Git, repo: Path) -> None:
    with open("/dev/null", "wb") as sink:
        subprocess.run(
            [GIT, "-C", str(repo), "log", "-p", "-n", "2000", "HEAD"], stdout=sink, env=git.env, check=True
        )


def clone_bytes(git: Git, repo: Path) -> int:
    proc = subprocess.Popen(
        [GIT, "-C", str(repo), "pack-objects", "--all", "--stdout", "-q"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=git.env,
    )
    total = 0
    while chunk := proc.stdout.read(1 << 20):
        total += len(chunk)
    if proc.wait() != 0:
        raise RuntimeError("pack-objects failed")
    return total


def measure(git: Git, repo: Path, reps: int) -> dict:
    reads = [timed(lambda: read_all(git, repo)) for _ in range(reps)]
    logs = [timed(lambda: log_patch(git, repo)) for _ in range(reps)]
    return {
        "pack": pack_size(repo),
        "read_s": min(reads),
        "log_s": min(logs),
        "clone": clone_bytes(git, repo),
    }


def run(args, tmp: Path, _procs) -> dict:
    git = Git(client_env(tmp / "home"), [])
    source = tmp / "source.git"
    if args.repo:
        git.run("clone", "--mirror", "--quiet", "--no-local", args.repo, str(source))
    else:
        say(f"generating {args.commits:,} commits")
        history.generate(source, git, history.HistoryGenerator(seed=7), args.commits)
    objects = int(git.run("-C", str(source), "count-objects", "-v").split("in-pack: ")[1].split()[0] or 0)
    say("writing the badly packed source (--window=0)")
    git.run("-C", str(source), "repack", "-a", "-d", "-f", "-q", "--window=0")
    bad = pack_size(source)
    today = tmp / "today.git"
    git.run("clone", "--mirror", "--quiet", "--no-local", str(source), str(today))
    git.run("-C", str(today), "repack", "-a", "-d", "-b", "--cruft", "-q")
    rows = [{"config": "source, --window=0", **measure(git, source, args.reps), "repack_s": None}]
    rows.append({"config": "today: repack -adb --cruft", **measure(git, today, args.reps), "repack_s": None})
    say("importing it into hostsite (manage.py repo create --import)")
    env = hostsite_env(tmp / "var", 8000)  # no server: manage.py only
    manage(env, "migrate", "--no-input")
    manage(env, "user", "create", "bench")
    started = time.perf_counter()
    out = manage(env, "repo", "create", "bench/imported", "--import", str(source))
    seconds = time.perf_counter() - started
    hosted = Path(out.strip().splitlines()[-1].rsplit(" at ", 1)[1])
    rows.append(
        {"config": "hostsite: repo create --import", **measure(git, hosted, args.reps), "repack_s": seconds}
    )
    for window in args.windows:
        for depth in args.depths:
            work = tmp / f"w{window}-d{depth}.git"
            shutil.copytree(today, work)
            say(f"repack -f --window={window} --depth={depth}")
            seconds = timed(
                lambda w=work, wi=window, de=depth: git.run(
                    "-C", str(w), "repack", "-a", "-d", "-f", "-b", "-q", f"--window={wi}", f"--depth={de}"
                )
            )
            rows.append(
                {
                    "config": f"fresh: --window={window} --depth={depth}",
                    **measure(git, work, args.reps),
                    "repack_s": seconds,
                }
            )
            shutil.rmtree(work)
    return {
        "commits": args.commits if not args.repo else None,
        "objects": objects,
        "bad_pack": bad,
        "rows": rows,
    }


def print_report(report: dict) -> None:
    rows = report["rows"]
    base = rows[1]
    print(f"\n{report['objects']:,} objects; badly packed source {report['bad_pack'] / 2**20:.1f} MiB\n")
    print(
        f"{'configuration':36} {'pack MiB':>9} {'x today':>8} {'clone MiB':>10} {'repack s':>9} "
        f"{'read-all s':>11} {'x today':>8} {'log -p s':>9} {'x today':>8}"
    )
    for row in rows:
        repack = f"{row['repack_s']:.1f}" if row["repack_s"] is not None else "-"
        print(
            f"{row['config']:36} {row['pack'] / 2**20:9.1f} {row['pack'] / base['pack']:8.2f} "
            f"{row['clone'] / 2**20:10.1f} {repack:>9} {row['read_s']:11.2f} {row['read_s'] / base['read_s']:8.2f} "
            f"{row['log_s']:9.2f} {row['log_s'] / base['log_s']:8.2f}"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=40_000)
    parser.add_argument("--repo", help="mirror this repository instead of generating one")
    parser.add_argument("--windows", type=lambda s: [int(x) for x in s.split(",")], default=[10, 50, 250])
    parser.add_argument("--depths", type=lambda s: [int(x) for x in s.split(",")], default=[20, 50])
    parser.add_argument("--reps", type=int, default=3)
    add_run_options(parser)
    args = parser.parse_args(argv)

    def run_and_print(args: argparse.Namespace, tmp: Path, procs) -> dict:
        report = run(args, tmp, procs)
        print_report(report)
        return report

    return run_benchmark("bench.packing", "hostsite-bench-packing-", args, run_and_print)


if __name__ == "__main__":
    sys.exit(main())
