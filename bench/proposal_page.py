"""Benchmark the proposal page: server time of `/<owner>/<name>/proposals/<N>` for a proposal of
200 files and 5,000 changed lines with 100 line-comment threads, cold (cache cleared) and warm.

A benchmark, not a test: it prints figures and PASS/MISS, and exits 0 unless the setup failed.
Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.proposal_page                       # 200 files, 5,000 lines, 100 threads
    .venv/bin/python -m bench.proposal_page --files 20 --rounds 2 # a quick look
    .venv/bin/python -m bench.proposal_page --profile             # + cProfile of a cold and a warm request

What it does, under one temporary directory:

1. `manage.py repo create bench/big`, then one `git fast-import` into it: main with --files
   Python files of --file-lines lines each, and alice's workspace ref refs/users/alice/feature
   one commit ahead, changing every file: --changed diff lines a file (+ and -: a third of
   them replaced lines, the rest added), 200 x 25 = 5,000 by default.
2. In a child Django process (the bench's own VAR_DIR and SQLite): the proposal, opened with
   reviews.services.proposal_open, and --threads Thread rows with a first comment each, made
   directly with the models, on the files' added lines.
3. Server time, in the same child: the page requested through Django's request handler
   (middleware, URL routing, the view, the templates) as a signed-in reader, timing the server
   side only. Cold = Django's cache cleared before the request (git's own files stay in the OS
   page cache, as on a live server); warm = the same request again. Medians of --rounds cold
   and 4 x --rounds warm samples. What the page showed (files, lines) is reported: the default
   view stops at the configured caps (DIFF_MAX_KB, DIFF_MAX_FILES, DIFF_MAX_FILE_LINES).
   A cold page highlights syntax within its budget (repos.diffhighlight.PAGE_BUDGET_CHARS),
   the rest with word-level changes only, and enqueues a task that highlights it all; the
   same page fully highlighted (what the task leaves in the cache) is measured after.

Targets (from the issue): cold at most 500 ms, warm at most 100 ms.
The machine may be shared and noisy: the figures are from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
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
    free_port,
    hostsite_env,
    hostsite_revision,
    manage,
    repo_create,
    run_benchmark,
    say,
    verdict,
)
from bench.harness.history import fast_import

COLD_TARGET_MS = 500.0
WARM_TARGET_MS = 100.0
REF = "refs/users/alice/feature"

MEASURE_SCRIPT = r"""
import cProfile, io, json, pstats, resource, sys, time
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client, RequestFactory
from repos.views.diffs import diff_context
from repos.models import Repository
from reviews import services
from reviews.models import Comment, Thread

ref, threads, rounds, profile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
User = get_user_model()
repo = Repository.objects.select_related("owner").get(owner__username="bench", name="big")
alice = User.objects.get(username="alice")
proposal = services.proposal_open(repo=repo, user=alice, source_ref=ref, target_branch="main",
                                  title="Change every file")
revision = proposal.revisions.get()
made = []
for i in range(threads):
    path = f"src/mod{i % 200:03d}.py"
    made.append(Thread(proposal=proposal, revision=revision, path=path, side="new",
                       line_start=3, line_end=3, context=[[3, "context"]], created_by=alice))
Thread.objects.bulk_create(made)
Comment.objects.bulk_create([
    Comment(proposal=proposal, author=alice, author_name="alice", body=f"Comment {t.pk}: why this?",
            revision=revision, thread=t) for t in Thread.objects.filter(proposal=proposal)
])
url = f"/bench/big/proposals/{proposal.number}"
client = Client(HTTP_HOST="127.0.0.1")
client.force_login(User.objects.get(username="bench"))

cpu = {"cold": [], "warm": []}

def cpu_now():
    # This process's CPU and its reaped children's (git): what the request cost, whatever
    # the other processes of a shared machine make it wait.
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

def get(kind=None):
    t, c = time.perf_counter(), cpu_now()
    response = client.get(url)
    elapsed = (time.perf_counter() - t) * 1000
    if kind:
        cpu[kind].append((cpu_now() - c) * 1000)
    assert response.status_code == 200, response.status_code
    return elapsed, response

get()  # imports, templates, the first connection: not part of any sample
cold, warm = [], []
for _ in range(rounds):
    cache.clear()
    ms, response = get("cold")
    cold.append(ms)
    for _ in range(4):
        ms, response = get("warm")
        warm.append(ms)
# The same page once the task has highlighted all of it (here: no budget, in the request).
from repos import diffcache
diffcache.PAGE_BUDGET_CHARS = None
cache.clear()
full_cold = [get()[0]]
full_warm = [get()[0] for _ in range(4 * rounds)]
# What the page's default view showed: the same diff, as the page asks for it (from the cache).
diff = diff_context(RequestFactory().get(url), repo.disk_path, revision.base_sha, revision.head_sha)["diff"]
shown_lines = sum(len(h.lines) for f in diff.files for h in f.hunks)
changed = sum(f.additions + f.deletions for f in diff.files)
report = {"url": url, "cold": cold, "warm": warm, "cpu_cold": cpu["cold"], "cpu_warm": cpu["warm"], "full_cold": full_cold, "full_warm": full_warm, "files": len(diff.files), "shown_lines": shown_lines,
          "changed": changed, "truncated": diff.truncated, "files_truncated": sum(f.truncated for f in diff.files),
          "bytes": len(response.content), "threads": Thread.objects.filter(proposal=proposal).count()}
if profile:
    out = io.StringIO()
    for name in ("cold", "warm"):
        if name == "cold":
            cache.clear()
        prof = cProfile.Profile()
        prof.enable()
        get()
        prof.disable()
        out.write(f"--- {name}\n")
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(45)
    report["profile"] = out.getvalue()
print(json.dumps(report))
"""


def python_file(i: int, lines: int, version: int) -> list[str]:
    return [
        f"def handler_{i}_{k}(request, value={k}):  # module {i}" if k % 10 == 0
        else f"    result_{k} = compute(\"{i}-{k}\", value, scale={k * 3})" if k % 3
        else f"    # note {k}: keep the value between {k} and {k + version}"
        for k in range(lines)
    ]  # fmt: skip


def write_history(git: Git, repo: Path, *, files: int, file_lines: int, changed: int) -> dict:
    """main: `files` Python files; the feature commit changes `changed` diff lines of each
    file: a third of them replaced (every other line from the top: a removed and an added line
    each, word-level changes), the rest added at its end."""
    replaced = changed // 3
    added = changed - 2 * replaced
    stamp = "Bench <bench@example.invalid> 1700000000 +0000"
    base = {f"src/mod{i:03d}.py": python_file(i, file_lines, 0) for i in range(files)}
    feature = {}
    for name, lines in base.items():
        new = list(lines)
        for j in range(replaced):
            k = (2 * j + 1) % len(new)
            new[k] = new[k].replace("compute(", "compute_fast(").replace("keep", "clamp") + "  # tuned"
        new += [f"    extra_{j} = finish(result_1, step={j})" for j in range(added)]
        feature[name] = new

    def commit(ref: str, mark: int, message: str, tree: dict[str, list[str]], parent: str | None) -> bytes:
        out = [
            f"commit {ref}\nmark :{mark}\nauthor {stamp}\ncommitter {stamp}\ndata {len(message)}\n{message}".encode()
        ]
        if parent:
            out.append(f"from {parent}\n".encode())
        for name, lines in tree.items():
            data = ("\n".join(lines) + "\n").encode()
            out.append(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
        return b"".join(out) + b"\n"

    def writer(stream):
        stream.write(commit("refs/heads/main", 1, "base\n", base, None))
        stream.write(commit(REF, 2, "change every file\n", feature, ":1"))

    fast_import(repo, git, writer)
    return {"files": files, "file_lines": file_lines, "changed_per_file": changed}


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta = {"git_version": git.run("version").strip().removeprefix("git version "),
            "hostsite_revision": hostsite_revision(git), "python": platform.python_version(),
            "cpus": os.cpu_count(), "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg())}  # fmt: skip
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    env = hostsite_env(var_dir, free_port())
    say("hostsite: migrate, users bench and alice, repo create bench/big")
    manage(env, "migrate", "--noinput")
    manage(env, "user", "create", "bench")
    manage(env, "user", "create", "alice")
    repo_dir = repo_create(env, "bench/big")
    say(f"writing main and {REF}: {args.files} files, {args.changed} changed lines each (fast-import)")
    meta.update(
        write_history(git, repo_dir, files=args.files, file_lines=args.file_lines, changed=args.changed)
    )
    git.run("--git-dir", str(repo_dir), "commit-graph", "write", "--reachable")

    say(f"proposal, {args.threads} threads, then {args.rounds} cold and {4 * args.rounds} warm requests")
    child = subprocess.run(
        [PY, "-c", MEASURE_SCRIPT, REF, str(args.threads), str(args.rounds), "1" if args.profile else "0"],
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
    results = {
        "cold_ms": median(server["cold"]), "warm_ms": median(server["warm"]),
        "cpu_cold_ms": median(server["cpu_cold"]), "cpu_warm_ms": median(server["cpu_warm"]),
        "full_cold_ms": median(server["full_cold"]), "full_warm_ms": median(server["full_warm"]),
        "samples": {k: server[k] for k in ("cold", "warm", "cpu_cold", "cpu_warm", "full_cold", "full_warm")},
        **{k: server[k] for k in ("url", "files", "shown_lines", "changed", "truncated", "files_truncated",
                                  "bytes", "threads")},
    }  # fmt: skip
    results["cold_ok"] = results["cold_ms"] is not None and results["cold_ms"] <= COLD_TARGET_MS
    results["warm_ok"] = results["warm_ms"] is not None and results["warm_ms"] <= WARM_TARGET_MS
    report = {"meta": meta, "results": results}
    print_report(report)
    if server.get("profile"):
        print("\ncProfile of one cold and one warm request (cumulative):\n" + server["profile"], flush=True)
    return report


def print_report(report: dict) -> None:
    m, r = report["meta"], report["results"]
    out = ["", "hostsite proposal page benchmark",
           f"  {m['files']} files of {m['file_lines']} lines, {m['changed_per_file']} changed lines each; "
           f"{r['threads']} threads",
           f"  git {m['git_version']}; hostsite {m['hostsite_revision']}; {m['cpus']} CPUs; "
           f"load avg before {m['loadavg_before']}", "",
           f"the page shows {r['files']} files, {r['changed']:,} changed lines ({r['shown_lines']:,} diff lines "
           f"with context){', cut at the caps' if r['truncated'] or r['files_truncated'] else ', nothing cut'}; "
           f"{r['bytes']:,} bytes", "",
           f"server time of GET {r['url']} (median)       measured   target",
           f"  cold (cache cleared)                          {fmt(r['cold_ms']):>7} ms  <= {COLD_TARGET_MS:.0f} ms  "
           f"{verdict(r['cold_ok'])}",
           f"  warm                                          {fmt(r['warm_ms']):>7} ms  <= {WARM_TARGET_MS:.0f} ms  "
           f"{verdict(r['warm_ok'])}",
           "  CPU time of the same requests (Python + git; about what a machine to itself would take):",
           f"    cold {fmt(r['cpu_cold_ms'])} ms, warm {fmt(r['cpu_warm_ms'])} ms",
           "  the page fully highlighted (no budget: what the task leaves in the cache):",
           f"    cold {fmt(r['full_cold_ms'])} ms (one sample), warm {fmt(r['full_warm_ms'])} ms",
           f"  (whole run {m['elapsed_s']:.0f} s)"]  # fmt: skip
    print("\n".join(out), flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=200, help="changed files (default 200)")
    p.add_argument("--file-lines", type=int, default=120, help="lines of each file on main (default 120)")
    p.add_argument(
        "--changed", type=int, default=25, help="changed (+/-) lines a file (default 25: 5,000 in all)"
    )
    p.add_argument("--threads", type=int, default=100, help="line-comment threads (default 100)")
    p.add_argument("--rounds", type=int, default=5, help="cold samples (default 5; 4 warm each)")
    p.add_argument("--profile", action="store_true", help="also print cProfile of a cold and a warm request")
    add_run_options(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.proposal_page", "hostsite-proposal-page-", parse_args(argv), run)


if __name__ == "__main__":
    raise SystemExit(main())
