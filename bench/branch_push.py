"""Benchmark branch pushes that land in workspaces, on a repository with 100,000 workspace refs.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.branch_push                 # 10,000 users x 10 refs, 10 rounds
    .venv/bin/python -m bench.branch_push --users 50 --refs-per-user 2 --rounds 1   # a quick look

What it does (hostsite started as bench.workspaces starts it, with bench.harness):

1. Generates a small repository (300 commits), imports it as `bench/ws` (owner `bench`, admin),
   adds `mona` as a maintainer and `carol` as a contributor (a reader of the public repository),
   and writes `--users` x `--refs-per-user` workspace refs into it.
2. Measures, all kinds interleaved in every round, their order alternating, one new small
   commit per push (wall time of `git push` over HTTP):
   - carol's branch push, mapped to her workspace by proc-receive (`git push origin my-fix`);
   - carol's push of the same kind of commit to refs/users/carol/<name> directly;
   - mona's (maintainer) push to refs/users/mona/<name>: the same push by a maintainer;
   - for reference: mona's branch push (updates a branch), and mona's push into carol's
     workspace (routed through proc-receive, judged against the tip).
   And the size of each pusher's push advertisement.

Targets (from the issue): the mapped push <= 1.1x the direct one; the maintainer's push <= 1.2x
the contributor's. The ratios are of medians of one run, and the median of per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import (
    Git,
    MeasureError,
    Processes,
    SetupError,
    add_run_options,
    client_env,
    fmt,
    free_port,
    hostsite_env,
    hostsite_revision,
    manage,
    med,
    repo_create,
    run_benchmark,
    say,
    start_web,
    user_token,
)
from bench.harness.refs import populate_workspaces
from bench.harness.repository import Pusher, generate_repository
from bench.harness.stats import ratio, verdict
from bench.workspaces import describe_advertisement, fetch_advertisement
from repos.hooks import refspace

KINDS = {
    # kind: (pusher, refspec target, what)
    "mapped": (
        "carol",
        "refs/heads/fix-{i}",
        f"carol: git push origin fix-<i> (-> {refspace.WORKSPACES}carol/fix-<i>)",
    ),
    "direct": (
        "carol",
        refspace.workspace_ref("carol", "d{i}"),
        f"carol: HEAD:{refspace.WORKSPACES}carol/d<i>",
    ),
    "maintainer": (
        "mona",
        refspace.workspace_ref("mona", "d{i}"),
        f"mona (maintainer): HEAD:{refspace.WORKSPACES}mona/d<i>",
    ),
    "maintainer_branch": ("mona", "refs/heads/mona-{i}", "mona: git push origin mona-<i> (a branch)"),
    "maintainer_other": (
        "mona",
        refspace.workspace_ref("carol", "m{i}"),
        f"mona: HEAD:{refspace.WORKSPACES}carol/m<i> (proc-receive)",
    ),
}
TARGETS = [
    # (name, numerator kind, denominator kind, at most)
    ("mapped push / direct workspace push", "mapped", "direct", 1.1),
    ("maintainer's push / contributor's push", "maintainer", "direct", 1.2),
]


def setup(tmp: Path, master: Path, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, users bench, carol and mona, repo create bench/ws, mona maintainer")
    manage(env, "migrate", "--noinput")
    tokens = {user: user_token(env, git, user) for user in ("bench", "carol", "mona")}
    path = repo_create(env, "bench/ws", "--import", str(master))
    manage(env, "repo", "member", "bench/ws", "mona", "--role", "maintainer")
    return {"env": env, "port": port, "tokens": tokens, "path": path}


def push_once(git: Git, pusher: Pusher, hs: dict, kind: str, i: int) -> float:
    user, target, _ = KINDS[kind]
    url = f"http://{user}:{hs['tokens'][user]}@127.0.0.1:{hs['port']}/bench/ws.git"
    commit = pusher.commit(f"{kind}-{i}")
    return 1000 * git.timed("--git-dir", str(pusher.work), "push", "--quiet", url,
                            f"{commit}:{target.format(i=i)}", timeout=600)  # fmt: skip


def measure_pushes(git: Git, pusher: Pusher, hs: dict, rounds: int) -> dict:
    samples: dict[str, list[float | None]] = {kind: [] for kind in KINDS}
    errors: list[str] = []
    say("warm-up (untimed): one push of each kind")
    for kind in KINDS:
        try:
            push_once(git, pusher, hs, kind, 100_000)
        except (MeasureError, subprocess.TimeoutExpired) as exc:
            raise SetupError(
                f"warm-up push {kind} failed: {exc}\n{hs['procs'].log_tail('hostsite')}"
            ) from None
    kinds = list(KINDS)
    for rnd in range(rounds):
        for kind in kinds if rnd % 2 == 0 else reversed(kinds):
            try:
                samples[kind].append(push_once(git, pusher, hs, kind, rnd))
            except (MeasureError, subprocess.TimeoutExpired) as exc:
                errors.append(f"round {rnd} {kind}: {exc}")
                samples[kind].append(None)
        say(
            f"round {rnd + 1}/{rounds}: "
            + ", ".join(f"{k} {fmt(samples[k][-1], '.0f')}" for k in kinds)
            + " ms"
        )
    return {"samples_ms": samples, "medians_ms": {k: med(v) for k, v in samples.items()}, "errors": errors}


def paired_ratio(a: list, b: list) -> float | None:
    pairs = [x / y for x, y in zip(a, b, strict=True) if x is not None and y]
    return statistics.median(pairs) if pairs else None


def build_targets(pushes: dict) -> list[dict]:
    out = []
    medians, samples = pushes["medians_ms"], pushes["samples_ms"]
    for name, num, den, limit in TARGETS:
        r = ratio(medians[num], medians[den])
        out.append({"target": name, "limit": limit, "ratio": r,
                    "paired_ratio": paired_ratio(samples[num], samples[den]),
                    "ok": None if r is None else r <= limit})  # fmt: skip
    return out


def print_report(report: dict) -> None:
    meta, adv, pushes = report["meta"], report["advertisements"], report["pushes"]
    print()
    print(f"bench.branch_push: {meta['users']:,} users x {meta['refs_per_user']} workspace refs, "
          f"{meta['rounds']} rounds, git {meta['git_version']}, hostsite {meta['hostsite_revision']}, "
          f"{meta['cpus']} CPUs, load {meta['loadavg_before']} -> {meta['loadavg_after']}")  # fmt: skip
    print()
    print(f"{'push advertisement':<28} {'bytes':>10} {'refs':>6} {'others workspace refs':>22}")
    for user, info in adv.items():
        print(f"{user:<28} {info['bytes']:>10,} {info['refs']:>6} {info['others_workspace_refs']:>22}")
    print()
    print(f"{'push (wall time of git push)':<64} {'median ms':>10}")
    for kind, (_user, _target, what) in KINDS.items():
        print(f"{what:<64} {fmt(pushes['medians_ms'][kind]):>10}")
    print()
    for t in report["targets"]:
        print(f"{t['target']:<44} {fmt(t['ratio'], '.2f')}x (paired {fmt(t['paired_ratio'], '.2f')}x), "
              f"target <= {t['limit']}x: {verdict(t['ok'])}")  # fmt: skip
    for error in pushes["errors"]:
        print(f"error: {error}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)  # fmt: skip
    p.add_argument("--users", type=int, default=10_000, help="users with workspace refs (default 10000)")
    p.add_argument("--refs-per-user", type=int, default=10, help="workspace refs per user (default 10)")
    p.add_argument(
        "--commits", type=int, default=300, help="commits in the generated repository (default 300)"
    )
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated repository")
    p.add_argument("--rounds", type=int, default=10, help="interleaved push rounds (default 10)")
    add_run_options(p)
    args = p.parse_args(argv)
    if min(args.users, args.refs_per_user, args.commits, args.rounds) < 1:
        p.error("--users, --refs-per-user, --commits and --rounds must be at least 1")
    return args


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {
        "users": args.users,
        "refs_per_user": args.refs_per_user,
        "rounds": args.rounds,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    master = tmp / "master.git"
    say(f"generating a repository: {args.commits} commits")
    generate_repository(master, git, size_mb=0, commits=args.commits, seed=args.seed)
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-q")
    hs = setup(tmp, master, git)
    hs["procs"] = procs
    say(f"writing {args.users:,} x {args.refs_per_user} workspace refs into bench/ws")
    meta["populate"] = populate_workspaces(git, hs["path"], users=args.users, per_user=args.refs_per_user)
    say("hostsite: start gunicorn")
    start_web(procs, hs["env"], hs["port"])

    try:
        adv = {
            user: describe_advertisement(fetch_advertisement(hs["port"], "ws", user, hs["tokens"][user])[0])
            for user in ("carol", "mona", "bench")
        }
    except (OSError, MeasureError) as exc:
        raise SetupError(f"fetching an advertisement failed: {exc}\n{procs.log_tail('hostsite')}") from None
    work = tmp / "push-work.git"
    git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
    pushes = measure_pushes(git, Pusher(git, work), hs, args.rounds)
    meta["elapsed_s"] = time.monotonic() - t_start
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = {"meta": meta, "advertisements": adv, "pushes": pushes, "targets": build_targets(pushes)}
    print_report(report)
    return report


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.branch_push", "hostsite-bench-bp-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
