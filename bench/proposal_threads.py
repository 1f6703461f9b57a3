"""Benchmark the proposal page with line comments: server time of `/<owner>/<name>/proposals/1`
for a 200-file, 5,000-line diff with 100 threads carried from the revision they were written
on, cold (Django's cache cleared) and warm, and the share of reviews.threads.page in it.

A benchmark, not a test: it prints figures and PASS/MISS, and exits 0 unless the setup failed.
Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.proposal_threads                  # 200 files, 100 threads
    .venv/bin/python -m bench.proposal_threads --files 20 --threads 10 --rounds 1   # a quick look

What it does, under one temporary directory:

1. Creates hostsite's repository alice/big (`manage.py`, its own VAR_DIR and SQLite) and, with
   client-side git, a base commit on main and two commits of alice's: the first adds --files
   files of --lines lines each; the second puts a line above every file's first line and
   changes line 5 of every fourth file. Both are fetched in (a fetch runs no hooks).
2. In a child Django process: opens proposal #1 on the first commit, writes --threads threads
   (lines 5-6 of the first files, with a reply each) on that revision, moves the ref to the
   second commit and records revision 2: three threads in four follow their lines (now 6-7),
   the others are outdated.
3. Server time of GET through Django's request handler (middleware, routing, the view, the
   templates), signed in as a reader: cold = Django's cache cleared before the request (git's
   files stay in the OS page cache), warm = the same request again; and the threads' part
   alone (reviews.threads.page.threads_context) on the same diff. Medians of --rounds; also the
   CPU time of the measuring process (git's children not included), steadier than wall time
   on a loaded machine.

Targets (from the issue, for the whole page): cold at most 500 ms, warm at most 100 ms.
The machine may be shared and noisy: the figures are from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import (
    BASE_DIR,
    PY,
    Git,
    Processes,
    SetupError,
    add_run_options,
    client_env,
    fmt,
    hostsite_env,
    hostsite_revision,
    manage,
    repo_create,
    run_benchmark,
    say,
    verdict,
)

COLD_TARGET_MS = 500.0
WARM_TARGET_MS = 100.0
REF = "refs/users/alice/feature"

MEASURE_SCRIPT = r"""
import json, statistics, sys, time
import django
django.setup()
from django.core.cache import cache
from django.test import Client, RequestFactory
from repos import diffs
from repos.git import run_git
from repos.models import Repository
from repos.selectors import user_by_name
from reviews import selectors, services
from reviews.threads import services as threads
from reviews.threads.page import threads_context

files, count, rounds, second = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
repo = Repository.objects.select_related("owner").get(owner__username="alice", name="big")
alice, bob = user_by_name("alice"), user_by_name("bob")
proposal = services.proposal_open(repo=repo, user=alice, source_ref="refs/users/alice/feature",
                                  target_branch="main", title="Big")
first = selectors.latest_revision(proposal)
for n in range(count):
    thread = threads.thread_create(proposal=proposal, user=bob, revision=first, path=f"src/d{n % 10}/f{n % files}.txt",
                                   side="new", line_start=5, line_end=6, body=f"Why **{n}**? `code`")
    threads.thread_reply(thread=thread, user=alice, body="Because.")
run_git(["update-ref", "refs/users/alice/feature", second], repo=repo.disk_path)
latest = services.revision_record(proposal=proposal, head=second)
url = f"/alice/big/proposals/{proposal.number}"
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(bob)
request = RequestFactory().get(url, HTTP_HOST="127.0.0.1")
request.user = bob

cpu = {"cold": [], "warm": [], "part_cold": [], "part_warm": []}

def get(kind=None):
    t, c = time.perf_counter(), time.process_time()
    response = client.get(url)
    elapsed = (time.perf_counter() - t) * 1000
    if kind:
        cpu[kind].append((time.process_time() - c) * 1000)
    assert response.status_code == 200, response.status_code
    return elapsed, response

def part(kind):
    diff = diffs.diff(repo.disk_path, latest.base_sha, latest.head_sha)
    t, c = time.perf_counter(), time.process_time()
    context = threads_context(request, repo, proposal, latest, latest, diff)
    cpu[kind].append((time.process_time() - c) * 1000)
    return (time.perf_counter() - t) * 1000, context

get()  # imports, templates, the first connection: not part of any sample
cold, warm, part_cold, part_warm = [], [], [], []
for _ in range(rounds):
    cache.clear()
    ms, response = get("cold")
    cold.append(ms)
    for _ in range(4):
        warm.append(get("warm")[0])
    cache.clear()
    ms, context = part("part_cold")
    part_cold.append(ms)
    for _ in range(4):
        part_warm.append(part("part_warm")[0])
body = response.content.decode()
print(json.dumps({"cold": cold, "warm": warm, "part_cold": part_cold, "part_warm": part_warm, "cpu": cpu,
                  "threads": body.count('data-thread="'), "outdated": len(context["threads_outdated"]),
                  "rows": body.count("<tr class="), "bytes": len(response.content)}))
"""


def _files(count: int, lines: int, *, second: bool) -> dict[str, str]:
    out = {}
    for n in range(count):
        body = [f"file {n} line {k} of the proposal's code" for k in range(1, lines + 1)]
        if second:
            if n % 4 == 0:
                body[4] = f"file {n} line 5, changed"
            body.insert(0, "a line above everything")
        out[f"src/d{n % 10}/f{n}.txt"] = "".join(f"{line}\n" for line in body)
    return out


def _commit(git: Git, work: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git.run("-C", str(work), "add", "--all")
    git.run("-C", str(work), "commit", "--quiet", "-m", message)
    return git.run("-C", str(work), "rev-parse", "HEAD").strip()


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta = {"git_version": git.run("version").strip().removeprefix("git version "),
            "hostsite_revision": hostsite_revision(git), "python": platform.python_version(),
            "cpus": os.cpu_count(), "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg())}  # fmt: skip
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    env = hostsite_env(var_dir, 8000)  # no server is started: the port is never bound
    say("hostsite: migrate, users alice and bob, repo create alice/big")
    manage(env, "migrate", "--noinput")
    for user in ("alice", "bob"):
        manage(env, "user", "create", user)
    repo_dir = repo_create(env, "alice/big")

    say(f"writing {args.files} files of {args.lines} lines, and a second revision, with git")
    work = tmp / "work"
    git.run("init", "--quiet", "-b", "main", str(work))
    _commit(git, work, {"README.md": "# big\n"}, "base")
    git.run("-C", str(work), "checkout", "--quiet", "-b", "feature")
    first = _commit(git, work, _files(args.files, args.lines, second=False), "add the code")
    second = _commit(git, work, _files(args.files, args.lines, second=True), "rework the code")
    git.run("--git-dir", str(repo_dir), "fetch", "--quiet", str(work), "+refs/heads/main:refs/heads/main")
    git.run(
        "--git-dir",
        str(repo_dir),
        "fetch",
        "--quiet",
        str(work),
        f"+{first}:{REF}",
        f"+{second}:refs/bench/second",
    )

    say(
        f"child Django process: {args.threads} threads, then {args.rounds} cold and {4 * args.rounds} warm GETs"
    )
    child = subprocess.run(
        [PY, "-c", MEASURE_SCRIPT, str(args.files), str(args.threads), str(args.rounds), second],
        env=env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    if child.returncode != 0:
        raise SetupError(f"measuring failed: {child.stderr[-3000:]}")
    server = json.loads(child.stdout.strip().splitlines()[-1])
    meta["elapsed_s"] = round(time.monotonic() - t_start, 1)
    results = {name: statistics.median(server[name]) for name in ("cold", "warm", "part_cold", "part_warm")}
    results.update({f"cpu_{name}": statistics.median(values) for name, values in server["cpu"].items()})
    results.update({k: server[k] for k in ("threads", "outdated", "rows", "bytes")})
    results["cold_ok"] = results["cold"] <= COLD_TARGET_MS
    results["warm_ok"] = results["warm"] <= WARM_TARGET_MS
    report = {"meta": meta, "args": vars(args) | {"json": None, "tmpdir": None}, "results": results,
              "samples": server}  # fmt: skip
    print_report(report)
    return report


def print_report(report: dict) -> None:
    m, a, r = report["meta"], report["args"], report["results"]
    out = ["", "hostsite proposal page with line comments",
           f"  {a['files']} files x {a['lines']} lines; {r['rows']:,} table rows, {r['bytes']:,} bytes; "
           f"{r['threads']} threads shown ({r['outdated']} outdated)",
           f"  git {m['git_version']}; hostsite {m['hostsite_revision']}; {m['cpus']} CPUs; "
           f"load avg before {m['loadavg_before']}", "",
           "server time of GET /alice/big/proposals/1 (median)   measured   target",
           f"  cold (Django's cache cleared)                  {fmt(r['cold']):>8} ms  <= {COLD_TARGET_MS:.0f} ms  "
           f"{verdict(r['cold_ok'])}",
           f"  warm                                           {fmt(r['warm']):>8} ms  <= {WARM_TARGET_MS:.0f} ms  "
           f"{verdict(r['warm_ok'])}",
           f"  of which the threads (threads_context): cold {fmt(r['part_cold'])} ms, warm {fmt(r['part_warm'])} ms",
           f"  CPU time of the web process (no git children): page cold {fmt(r['cpu_cold'])} ms, "
           f"warm {fmt(r['cpu_warm'])} ms; threads cold {fmt(r['cpu_part_cold'])} ms, warm {fmt(r['cpu_part_warm'])} ms",
           f"  (whole run {m['elapsed_s']:.0f} s)"]  # fmt: skip
    print("\n".join(out), flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=200, help="files the proposal adds (default 200)")
    p.add_argument("--lines", type=int, default=25, help="lines a file (default 25)")
    p.add_argument("--threads", type=int, default=100, help="threads (default 100)")
    p.add_argument("--rounds", type=int, default=5, help="cold samples (default 5; 4 warm each)")
    add_run_options(p)
    args = p.parse_args(argv)
    if min(args.files, args.threads, args.rounds) < 1 or args.lines < 7:
        p.error("need positive counts and at least 7 lines a file")
    return args


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.proposal_threads", "hostsite-bench-threads-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
