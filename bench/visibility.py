"""Benchmark what moderation's visibility rule costs: a repository with a taken-down and a
hidden workspace against the same repository with nothing moderated.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.visibility                  # 20,000 commits, 2,000 x 5 refs, 10 rounds
    .venv/bin/python -m bench.visibility --rounds 5 --json /tmp/visibility.json
    .venv/bin/python -m bench.visibility --commits 2000 --users 200 --rounds 3   # a quick look

What it does, all on loopback and under one temporary directory (hostsite is started as
bench.smart_http starts it, with bench.harness):

1. Generates a history (`--commits`) and imports it twice, as `bench/moderated` and
   `bench/plain`; writes `--users` x 5 workspace refs into both (update-ref --stdin, then
   pack-refs). `mallory` pushes a workspace of `--mallory-commits` (200) commits of her own and
   `dave` one of 20 to both repositories. In bench/moderated only, a staff user takes mallory's
   workspace down (`do_take_down_workspace`: her refs move to refs/takedown/mallory/) and hides
   dave's (`do_hide_workspace`). The two repositories then hold the same objects and the same
   number of refs: the only difference is the moderation, so carol (a reader with a write
   token) and anonymous visitors get a closure of ~1,000 objects on bench/moderated only.
2. Measures, the two repositories interleaved in every round (order alternating), medians of
   `--rounds`:
   - end-to-end push latency of carol, one new small commit to refs/users/carol/b<i>, and her
     nameless push to refs/for/main; a page requested right after each of her pushes (the
     push changed refs, so the closure is recomputed);
   - GET of a canonical commit's page, anonymous, refs unchanged;
   - a protocol v2 fetch by id of a canonical commit (want it, have its parent), and a
     negotiation round of 256 haves, 10 of them mallory's (hidden on bench/moderated), anonymous;
   - the closure cold (a ref changed and the hostsite-hidden-* cache files deleted, then one
     page request) and warm (the next page request); and in-process, in `manage.py shell`:
     computing it, reading the cache file, the per-process memory, the refs fingerprint;
   - the installed pre-receive hook run directly, with the environment the platform passes
     (`repos.gitaccess.push_env`, which brings HOSTSITE_BLOCKED_PREFIXES on
     bench/moderated only), carol creating a ref at a new commit.
   It checks the rule: mallory's commit is a 404, a refused want and push on bench/moderated,
   served on bench/plain.

Target: on bench/moderated, carol's pushes (both kinds) and the commit page within 1.2x of
bench/plain (ratio of medians; the median of per-round ratios is printed too).

The machine may be shared and noisy: compare the ratios of one run, not figures across runs.
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
from bench.visibility_report import REPOS, build_targets, print_report
from bench.visibility_steps import (
    check_rule,
    fetch_by_id,
    get_page,
    measure_closure,
    measure_hooks,
    negotiate,
    url_for,
)
from repos.hooks import refspace

USERS = ("bench", "carol", "mallory", "dave")


# --- setup -------------------------------------------------------------------------------------


def setup_hostsite(tmp: Path, master: Path, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, users and write tokens, staff user, repo create bench/moderated and bench/plain")
    manage(env, "migrate", "--noinput")
    tokens = {user: user_token(env, git, user) for user in USERS}
    manage(env, "user", "create", "moderator", "--staff")
    dirs = {key: repo_create(env, f"bench/{key}", "--import", str(master))
            for key in REPOS}  # fmt: skip
    return {"env": env, "port": port, "var_dir": var_dir, "tokens": tokens, "dirs": dirs,
            "hooks_dir": dirs["plain"].parent.parent / ".hooks"}  # fmt: skip


def own_history(git: Git, work: Path, user: str, count: int, base: str) -> list[str]:
    """`count` commits on top of `base`, each adding one file under <user>/: objects that only
    this user's workspace will reach."""
    gd = ("--git-dir", str(work))
    root = [line for line in git.run(*gd, "ls-tree", base).splitlines() if not line.endswith(f"\t{user}")]
    entries: list[str] = []
    commits, parent = [], base
    for k in range(count):
        blob = git.run(*gd, "hash-object", "-w", "--stdin", input=f"{user}'s note {k}\n".encode()).strip()
        entries.append(f"100644 blob {blob}\tnote-{k:04d}.txt\n")
        sub = git.run(*gd, "mktree", input="".join(entries).encode()).strip()
        tree = git.run(
            *gd, "mktree", input=("\n".join(root) + f"\n040000 tree {sub}\t{user}\n").encode()
        ).strip()
        parent = git.run(*gd, "commit-tree", tree, "-p", parent, "-m", f"{user} {k}").strip()
        commits.append(parent)
    return commits


def moderate(hs: dict) -> None:
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from repos.models import Repository\n"
        "from workspaces.moderation import do_hide_workspace, do_take_down_workspace\n"
        "U = get_user_model()\n"
        "repo = Repository.objects.get(owner__username='bench', name='moderated')\n"
        "staff = U.objects.get(username='moderator')\n"
        "do_take_down_workspace(repo=repo, user=U.objects.get(username='mallory'), acting_user=staff,"
        " reason='bench: taken down')\n"
        "do_hide_workspace(repo=repo, user=U.objects.get(username='dave'), acting_user=staff,"
        " reason='bench: hidden')\n"
    )
    manage(hs["env"], "shell", "-c", code)


def push(git: Git, pusher: Pusher, hs: dict, repo: str, kind: str, i: int) -> float:
    target = refspace.workspace_ref("carol", f"b{i}") if kind == "workspace" else refspace.FOR + "main"
    commit = pusher.commit(f"{kind}-{repo}-{i}")
    return 1000 * git.timed("--git-dir", str(pusher.work), "push", "--quiet", url_for(hs, repo, "carol") + ".git",
                            f"{commit}:{target}", timeout=600)  # fmt: skip


def touch_ref(git: Git, gitdir: Path, value: str) -> None:
    """Change a ref (the closure's cache key) and drop the cache files: the next reader computes."""
    git.run("--git-dir", str(gitdir), "update-ref", refspace.BENCH + "cold", value)
    for path in gitdir.glob("hostsite-hidden-*"):
        path.unlink(missing_ok=True)


# --- measurements ------------------------------------------------------------------------------


def pair(mod: list, plain: list, what: str) -> dict:
    m_mod, m_plain = med(mod), med(plain)
    ratios = [a / b for a, b in zip(mod, plain, strict=True) if a is not None and b]
    return {"what": what, "moderated_ms": mod, "plain_ms": plain, "moderated_median_ms": m_mod,
            "plain_median_ms": m_plain, "ratio": m_mod / m_plain if m_mod is not None and m_plain else None,
            "paired_ratio": statistics.median(ratios) if ratios else None}  # fmt: skip


def measure_rounds(git: Git, pusher: Pusher, hs: dict, canon: dict, rounds: int) -> tuple[dict, list[str]]:
    names = {
        "push_workspace": f"carol push -> {refspace.WORKSPACES}carol/b<i>",
        "push_nameless": f"carol nameless push -> {refspace.FOR}main",
        "page_after_push": "commit page right after her push (recomputes)",
        "page": "GET commit page, anonymous, refs unchanged",
        "fetch": "v2 fetch by id (want + have parent), anonymous",
        "negotiate": "v2 negotiation round, 256 haves (10 hidden), anonymous",
        "page_cold": "closure cold: page after a ref change, no cache",
        "page_warm": "closure warm: the next page request",
    }
    samples = {name: {repo: [] for repo in REPOS} for name in names}
    errors: list[str] = []

    def timed(name: str, repo: str, ok, fn, *args) -> None:
        try:
            result = fn(*args)
        except (MeasureError, subprocess.TimeoutExpired, OSError) as exc:
            errors.append(f"{name} bench/{repo}: {exc}")
            samples[name][repo].append(None)
            return
        if not ok(result):
            errors.append(f"{name} bench/{repo}: unexpected answer {result[:-1]}")
        samples[name][repo].append(result[-1])

    def timed_push(repo: str, kind: str, i: int) -> tuple[float]:
        return (push(git, pusher, hs, repo, kind, i),)

    def page_ok(result) -> bool:
        return result[0] == 200

    def fetch_ok(result) -> bool:
        return result[0] == 200 and result[1]

    sha, parent = canon["sha"], canon["parent"]
    say("warm-up (untimed): one of each request on each repository")
    for repo in REPOS:
        for kind in ("workspace", "nameless"):
            try:
                push(git, pusher, hs, repo, kind, 10_000)
            except (MeasureError, subprocess.TimeoutExpired) as exc:
                raise SetupError(f"warm-up push {kind} to bench/{repo} failed: {exc}\n"
                                 f"{hs['procs'].log_tail('hostsite')}") from None  # fmt: skip
        if get_page(hs, repo, sha)[0] != 200 or not fetch_by_id(hs, repo, sha, parent)[1]:
            raise SetupError(f"bench/{repo}: the canonical commit's page or v2 fetch failed\n"
                             f"{hs['procs'].log_tail('hostsite')}")  # fmt: skip
    for rnd in range(rounds):
        order = REPOS if rnd % 2 == 0 else tuple(reversed(REPOS))
        for repo in order:
            timed("push_workspace", repo, bool, timed_push, repo, "workspace", rnd)
            timed("page_after_push", repo, page_ok, get_page, hs, repo, sha)
        for repo in order:
            timed("push_nameless", repo, bool, timed_push, repo, "nameless", rnd)
        for repo in order:  # settle: every worker's first request after the pushes, untimed
            for _ in range(3):
                get_page(hs, repo, sha)
        for _ in range(3):
            for repo in order:
                timed("page", repo, page_ok, get_page, hs, repo, sha)
            for repo in order:
                timed("fetch", repo, fetch_ok, fetch_by_id, hs, repo, sha, parent)
            for repo in order:
                timed("negotiate", repo, fetch_ok, negotiate, hs, repo, sha, canon["haves"], False)
        for repo in order:
            touch_ref(git, hs["dirs"][repo], canon["tips"][rnd % 2])
            timed("page_cold", repo, page_ok, get_page, hs, repo, sha)
            timed("page_warm", repo, page_ok, get_page, hs, repo, sha)
        say(f"round {rnd + 1}/{rounds}: " + ", ".join(
            f"{name} {fmt(samples[name]['moderated'][-1], '.0f')}/{fmt(samples[name]['plain'][-1], '.0f')}"
            for name in ("push_workspace", "push_nameless", "page", "fetch", "page_cold")) + " ms (mod/plain)")  # fmt: skip
    return {
        name: pair(samples[name]["moderated"], samples[name]["plain"], what) for name, what in names.items()
    }, errors


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument(
        "--commits", type=int, default=20_000, help="commits in the generated history (default 20000)"
    )
    p.add_argument("--users", type=int, default=2_000, help="users with 5 workspace refs each (default 2000)")
    p.add_argument(
        "--mallory-commits", type=int, default=200, help="commits of the taken-down workspace (200)"
    )
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated history")
    p.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    p.add_argument("--hook-runs", type=int, default=30, help="runs of each hook case (default 30)")
    p.add_argument("--closure-runs", type=int, default=5, help="in-process closure computations (default 5)")
    add_run_options(p)
    args = p.parse_args(argv)
    if (
        min(args.commits, args.users, args.mallory_commits, args.rounds, args.hook_runs, args.closure_runs)
        < 1
    ):
        p.error("every count must be at least 1")
    if args.commits < 120:
        p.error("--commits must be at least 120 (workspaces start 100 commits below the tip)")
    return args


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {"commits": args.commits, "users": args.users, "mallory_commits": args.mallory_commits,
                  "dave_commits": 20, "rounds": args.rounds, "hook_runs": args.hook_runs,
                  "git_version": git.run("version").strip().removeprefix("git version "),
                  "hostsite_revision": hostsite_revision(git), "python": platform.python_version(),
                  "cpus": os.cpu_count(), "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg())}  # fmt: skip

    master = tmp / "master.git"
    say(f"generating a history: {args.commits:,} commits")
    generate_repository(master, git, size_mb=0, commits=args.commits, seed=args.seed)
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-q")
    hs = setup_hostsite(tmp, master, git)
    hs["procs"] = procs
    say(f"writing {args.users:,} x 5 workspace refs into both repositories")
    for repo in REPOS:
        meta["populate"] = populate_workspaces(git, hs["dirs"][repo], users=args.users, per_user=5)
    say("hostsite: start gunicorn")
    start_web(procs, hs["env"], hs["port"])

    work = tmp / "push-work.git"
    git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
    gd = ("--git-dir", str(work))
    canon = {"sha": git.run(*gd, "rev-parse", "main~10").strip(), "parent": git.run(*gd, "rev-parse", "main~11").strip(),
             "tips": [git.run(*gd, "rev-parse", f"main~{k}").strip() for k in (1, 2)]}  # fmt: skip
    say(f"mallory and dave push workspaces of their own ({args.mallory_commits} and 20 commits) to both")
    mallory = own_history(
        git, work, "mallory", args.mallory_commits, git.run(*gd, "rev-parse", "main~100").strip()
    )
    dave = own_history(git, work, "dave", 20, git.run(*gd, "rev-parse", "main~60").strip())
    canon |= {"mallory": mallory[-1], "mallory_parent": mallory[-2] if len(mallory) > 1 else canon["sha"]}
    # A negotiation round: 246 commits of the branch and 10 of mallory's (hidden on moderated).
    canon["haves"] = git.run(*gd, "rev-list", "--max-count=246", "main~12").split() + mallory[:10]
    for repo in REPOS:
        for user, refspecs in (("mallory", [f"{mallory[-1]}:{refspace.WORKSPACES}mallory/w1",
                                            f"{mallory[len(mallory) // 2]}:{refspace.WORKSPACES}mallory/w2"]),
                               ("dave", [f"{dave[-1]}:{refspace.WORKSPACES}dave/w1"])):  # fmt: skip
            try:
                git.run(*gd, "push", "--quiet", url_for(hs, repo, user) + ".git", *refspecs, timeout=600)
            except MeasureError as exc:
                raise SetupError(
                    f"{user}'s push to bench/{repo} failed: {exc}\n{procs.log_tail('hostsite')}"
                ) from None
    say("moderation on bench/moderated: mallory's workspace taken down, dave's hidden")
    moderate(hs)
    moved = git.run(
        "--git-dir", str(hs["dirs"]["moderated"]), "for-each-ref", "--format=%(refname)", refspace.TAKEDOWN
    )
    if len(moved.split()) != 2:
        raise SetupError(f"the take-down did not move mallory's refs: {moved!r}")

    pusher = Pusher(git, work)
    report_rows, errors = measure_rounds(git, pusher, hs, canon, args.rounds)
    say(f"closure in-process: {args.closure_runs} runs")
    closure = measure_closure(hs, args.closure_runs)
    say(f"pre-receive hook: {args.hook_runs} runs of each case")
    hooks = measure_hooks(hs, git, tmp, canon, args.hook_runs)
    rule = check_rule(hs, canon)
    if rule["moderated"]["page_status"] != 404 or rule["moderated"]["fetch"][1]:
        errors.append(f"mallory's commit is reachable on bench/moderated: {rule['moderated']}")

    meta["elapsed_s"] = time.monotonic() - t_start
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = {"meta": meta, "rounds": report_rows, "errors": errors, "closure": closure, "hooks": hooks,
              "rule": rule, "targets": build_targets(report_rows)}  # fmt: skip
    print_report(report)
    return report


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.visibility", "hostsite-bench-vis-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
