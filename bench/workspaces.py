"""Benchmark workspaces at scale: a repository with 10,000 users x 10 workspace refs.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.workspaces                  # 100,000 workspace refs, 10 rounds
    .venv/bin/python -m bench.workspaces --rounds 5 --json /tmp/workspaces.json
    .venv/bin/python -m bench.workspaces --users 1000     # a smaller repository, for a quick look

What it does, all on loopback and under one temporary directory (hostsite is started as
bench.smart_http starts it, with bench.harness):

1. Generates a small repository (300 commits) and imports it into hostsite twice, as `bench/ws`
   and `bench/plain`. The owner `bench` is admin of both; `carol` has a write token and no
   membership: on these public repositories she is a reader, i.e. a contributor.
2. Writes `--users` x `--refs-per-user` refs (`refs/users/u00000/r0` ...) straight into
   bench/ws with `git update-ref --stdin`, spread over every commit, then packs them
   (`git pack-refs --all` with the files backend; a compaction with reftable).
3. Measures:
   - the push advertisement (`GET info/refs?service=git-receive-pack`): carol's (ref hiding
     applies) and bench's (admins see every workspace, i.e. the size without hiding);
   - the installed pre-receive hook, run directly with the HOSTSITE_* environment the platform
     sets and GIT_DIR on bench/ws: carol creating a ref in her own workspace (which makes the
     hook count her refs with `git for-each-ref`), the same on bench/plain, and an admin
     fast-forward of main (which makes it ask git about ancestry);
   - end-to-end push latency (wall time of `git push` over HTTP, one new small commit each):
     carol to refs/users/carol/b<i>, carol's nameless push to refs/for/main, and, for
     reference, bench (admin: receives the full advertisement) to refs/users/bench/b<i>;
     bench/ws and bench/plain interleaved in every round, their order alternating.

Targets (from the issue): advertisement to a contributor <= 10 KB (7.3 MB without hiding, as
measured there); pre-receive median <= 30 ms; push latency on bench/ws <= 1.2x the same push
to bench/plain.

The machine may be shared and noisy: compare the ratios of one run, not absolute numbers
across runs.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import statistics
import subprocess
import sys
import time
import urllib.request
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
from bench.workspaces_report import REPOS, build_targets, print_report
from bench.workspaces_steps import measure_git_steps, measure_hooks
from repos.hooks import refspace

# --- setup -------------------------------------------------------------------------------------


def setup_hostsite(tmp: Path, master: Path, procs: Processes, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, users bench and carol, write tokens, repo create bench/ws and bench/plain")
    manage(env, "migrate", "--noinput")
    tokens = {user: user_token(env, git, user) for user in ("bench", "carol")}
    dirs = {key: repo_create(env, f"bench/{key}", "--import", str(master)) for key in REPOS}
    return {"env": env, "port": port, "var_dir": var_dir, "tokens": tokens, "dirs": dirs,
            "hooks_dir": dirs["ws"].parent.parent / ".hooks"}  # fmt: skip


# --- advertisement -----------------------------------------------------------------------------


def pkt_lines(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos + 4 <= len(data):
        n = int(data[pos : pos + 4], 16)
        if n == 0:
            pos += 4
            continue
        out.append(data[pos + 4 : pos + n])
        pos += n
    return out


def fetch_advertisement(port: int, repo: str, user: str, token: str) -> tuple[bytes, float]:
    url = f"http://127.0.0.1:{port}/bench/{repo}.git/info/refs?service=git-receive-pack"
    auth = base64.b64encode(f"{user}:{token}".encode()).decode()
    request = urllib.request.Request(url, headers={"Authorization": f"Basic {auth}", "User-Agent": "git/2"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    t0 = time.perf_counter()
    with opener.open(request, timeout=120) as response:
        body = response.read()
    return body, 1000 * (time.perf_counter() - t0)


def describe_advertisement(body: bytes) -> dict:
    lines = pkt_lines(body)
    if not lines or not lines[0].startswith(b"# service=git-receive-pack"):
        raise MeasureError(f"not a receive-pack advertisement: {body[:200]!r}")
    refs = [line.split(b"\0", 1)[0].rstrip(b"\n").split(b" ", 1)[-1] for line in lines[1:]]
    return {
        "bytes": len(body),
        "refs": len(refs),
        "workspace_refs": sum(r.startswith(refspace.WORKSPACES.encode()) for r in refs),
        "others_workspace_refs": sum(r.startswith(refspace.WORKSPACES.encode())
                                     and not r.startswith(refspace.workspace_prefix("carol").encode())
                                     and not r.startswith(refspace.workspace_prefix("bench").encode()) for r in refs),
    }  # fmt: skip


def measure_advertisements(hs: dict, reps: int) -> dict:
    cases = [(user, repo) for repo in REPOS for user in ("carol", "bench")]
    results: dict = {}
    for rep in range(reps):
        for user, repo in cases if rep % 2 == 0 else reversed(cases):
            key = f"{user}@{repo}"
            body, ms = fetch_advertisement(hs["port"], repo, user, hs["tokens"][user])
            info = describe_advertisement(body)
            r = results.setdefault(key, info | {"user": user, "repo": repo, "ms": []})
            r["ms"].append(ms)
            r["bytes_varied"] = r.get("bytes_varied", False) or r["bytes"] != info["bytes"]
    for r in results.values():
        r["median_ms"] = statistics.median(r["ms"])
    return results


# --- hooks -------------------------------------------------------------------------------------


# --- pushes ------------------------------------------------------------------------------------

PUSH_KINDS = {
    # kind: (pusher, refspec target, what)
    "carol_workspace": (
        "carol",
        refspace.workspace_ref("carol", "b{i}"),
        f"carol -> {refspace.WORKSPACES}carol/b<i>",
    ),
    "carol_nameless": ("carol", refspace.FOR + "main", f"carol -> {refspace.FOR}main (nameless)"),
    "admin_workspace": (
        "bench",
        refspace.workspace_ref("bench", "b{i}"),
        f"bench (admin) -> {refspace.WORKSPACES}bench/b<i>",
    ),
}


def push_once(git: Git, pusher: Pusher, hs: dict, kind: str, repo: str, i: int) -> float:
    user, target, _ = PUSH_KINDS[kind]
    url = f"http://{user}:{hs['tokens'][user]}@127.0.0.1:{hs['port']}/bench/{repo}.git"
    commit = pusher.commit(f"{kind}-{repo}-{i}")
    return 1000 * git.timed("--git-dir", str(pusher.work), "push", "--quiet", url,
                            f"{commit}:{target.format(i=i)}", timeout=600)  # fmt: skip


def measure_pushes(git: Git, pusher: Pusher, hs: dict, kinds: list[str], rounds: int) -> dict:
    samples = {kind: {repo: [] for repo in REPOS} for kind in kinds}
    errors: list[str] = []
    say("push warm-up (untimed): one push of each kind to each repository")
    for kind in kinds:
        for repo in REPOS:
            try:
                push_once(git, pusher, hs, kind, repo, 10_000)
            except (MeasureError, subprocess.TimeoutExpired) as exc:
                raise SetupError(f"warm-up push {kind} to bench/{repo} failed: {exc}\n"
                                 f"{hs['procs'].log_tail('hostsite')}") from None  # fmt: skip
    for rnd in range(rounds):
        order = REPOS if rnd % 2 == 0 else tuple(reversed(REPOS))
        for kind in kinds:
            for repo in order:
                try:
                    ms = push_once(git, pusher, hs, kind, repo, rnd)
                except (MeasureError, subprocess.TimeoutExpired) as exc:
                    errors.append(f"round {rnd} {kind} bench/{repo}: {exc}")
                    ms = None
                samples[kind][repo].append(ms)
        say(f"round {rnd + 1}/{rounds}: " + ", ".join(
            f"{kind} ws {fmt(samples[kind]['ws'][-1], '.0f')} / plain {fmt(samples[kind]['plain'][-1], '.0f')} ms"
            for kind in kinds))  # fmt: skip
    results = {}
    for kind in kinds:
        ws, plain = samples[kind]["ws"], samples[kind]["plain"]
        m_ws, m_plain = med(ws), med(plain)
        pairs = [a / b for a, b in zip(ws, plain, strict=True) if a is not None and b]
        results[kind] = {
            "what": PUSH_KINDS[kind][2],
            "ws_ms": ws,
            "plain_ms": plain,
            "ws_median_ms": m_ws,
            "plain_median_ms": m_plain,
            "ratio": (m_ws / m_plain) if m_ws is not None and m_plain else None,
            "paired_ratio": statistics.median(pairs) if pairs else None,
        }
    return {"kinds": results, "errors": errors}


# --- main --------------------------------------------------------------------------------------


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
    p.add_argument("--hook-runs", type=int, default=50, help="runs of each hook case (default 50)")
    p.add_argument("--adv-reps", type=int, default=5, help="fetches of each advertisement (default 5)")
    p.add_argument("--step-runs", type=int, default=15, help="runs of each server-side git step (default 15)")
    p.add_argument("--no-nameless", action="store_true", help=f"skip the {refspace.FOR}main pushes")
    p.add_argument("--no-admin-push", action="store_true", help="skip the admin's (unhidden) pushes")
    add_run_options(p)
    args = p.parse_args(argv)
    if (
        min(
            args.users,
            args.refs_per_user,
            args.commits,
            args.rounds,
            args.hook_runs,
            args.adv_reps,
            args.step_runs,
        )
        < 1
    ):
        p.error(
            "--users, --refs-per-user, --commits, --rounds and the --*-runs/--adv-reps counts must be at least 1"
        )
    return args


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {
        "users": args.users,
        "refs_per_user": args.refs_per_user,
        "rounds": args.rounds,
        "hook_runs": args.hook_runs,
        "adv_reps": args.adv_reps,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "repository": f"generated (seed {args.seed}, {args.commits} commits, text only)",
    }

    master = tmp / "master.git"
    say(f"generating a repository: {args.commits} commits")
    generate_repository(master, git, size_mb=0, commits=args.commits, seed=args.seed)
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-q")

    hs = setup_hostsite(tmp, master, procs, git)
    hs["procs"] = procs
    total = args.users * args.refs_per_user
    say(f"writing {args.users:,} x {args.refs_per_user} = {total:,} workspace refs into bench/ws")
    meta["populate"] = populate_workspaces(
        git, hs["dirs"]["ws"], users=args.users, per_user=args.refs_per_user
    )
    say(f"  {meta['populate']}")
    say("hostsite: start gunicorn")
    start_web(procs, hs["env"], hs["port"])

    say(f"advertisements: {args.adv_reps} fetches each of carol's and bench's, on bench/ws and bench/plain")
    try:
        adv = measure_advertisements(hs, args.adv_reps)
    except (OSError, MeasureError) as exc:
        raise SetupError(f"fetching an advertisement failed: {exc}\n{procs.log_tail('hostsite')}") from None
    if adv["carol@ws"]["others_workspace_refs"]:
        say(f"WARNING: carol's advertisement holds {adv['carol@ws']['others_workspace_refs']} refs of others' "
            "workspaces: ref hiding did not apply")  # fmt: skip

    say(f"pre-receive hook: {args.hook_runs} runs of each case")
    hooks = measure_hooks(hs, git, args.hook_runs)

    work = tmp / "push-work.git"
    git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
    pusher = Pusher(git, work)
    kinds = ["carol_workspace"]
    if not args.no_nameless:
        kinds.append("carol_nameless")
    if not args.no_admin_push:
        kinds.append("admin_workspace")
    pushes = measure_pushes(git, pusher, hs, kinds, args.rounds)

    say(f"server-side git steps that read every ref: {args.step_runs} runs each, on both repositories")
    steps = measure_git_steps(hs, git, tmp, args.step_runs)

    meta["elapsed_s"] = time.monotonic() - t_start
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = {"meta": meta, "advertisements": adv, "hooks": hooks, "pushes": pushes, "git_steps": steps,
              "targets": build_targets(adv, hooks, pushes)}  # fmt: skip
    print_report(report)
    return report


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.workspaces", "hostsite-bench-ws-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
