"""Benchmark hostsite's browse pages against cgit on the same bare repository.

A benchmark, not a test: it prints a table and PASS/MISS per page, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.browse                         # a generated 200k-commit history
    .venv/bin/python -m bench.browse --commits 5000 --rounds 3
    .venv/bin/python -m bench.browse --repo /path/to/repo.git --big-file kernel/sched/core.c

What it does, on loopback and under one temporary directory:

1. Generates a history with the bench generator (bench/harness/history.py, fast-import) plus a
   ~5,000-line C file and a README (bench/harness/cgit.py), repacked once with a commit-graph,
   or takes `--repo` (a packed mirror of it if it has loose objects).
2. hostsite gets a repository (`repo create`) holding the same packs, commit-graph and refs
   (an import would check every object again) and serves it with gunicorn as `make run` does;
   cgit (Debian's package, behind nginx + fcgiwrap, installed with apt-get when missing) serves
   hostsite's very repository directory.
3. Fetches the same pages from both, interleaved (hostsite, cgit, hostsite, cgit, ...), one
   warm-up round (its times are shown as "first": hostsite's caches were empty) then
   `--rounds` timed rounds; server time is the time to the full response over loopback, on a
   new connection each time.

Targets (from the issue): every page at most 3x cgit's median and at most 100 ms (median,
warm). The compare across a long range has no cgit counterpart page; cgit's diff of the same
two commits is shown as its baseline.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

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
    ratio,
    repo_create,
    run_benchmark,
    say,
    start_web,
    verdict,
)
from bench.harness.baselines import ensure_debian_packages
from bench.harness.cgit import BIG_C, generate_browse_history, setup_cgit
from bench.harness.repository import install_packs, pack_files

MAX_RATIO = 3.0
MAX_MS = 100.0


def fetch(url: str) -> tuple[float, int, int]:
    """(milliseconds to the whole response, status, body bytes) on a fresh connection."""
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": "identity"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    return 1000 * (time.perf_counter() - t0), response.status, len(body)


def pages(hs: str, cg: str, *, tip: str, old: str, subdir: str, raw_file: str, big: str) -> list[tuple]:
    """(key, label, hostsite URL, cgit URL or None, cgit label)."""
    return [
        ("summary", "repository summary", hs, f"{cg}/", "summary"),
        ("root_tree", "root tree", f"{hs}/tree/main", f"{cg}/tree/", "tree"),
        ("subdir_tree", f"subdirectory tree ({subdir})", f"{hs}/tree/main/{subdir}", f"{cg}/tree/{subdir}", "tree"),
        ("blob", f"blob of {big}", f"{hs}/blob/main/{big}", f"{cg}/tree/{big}", "tree (file)"),
        ("raw", f"raw file ({raw_file})", f"{hs}/raw/main/{raw_file}", f"{cg}/plain/{raw_file}", "plain"),
        ("commit", "commit (tip)", f"{hs}/commit/{tip}", f"{cg}/commit/?id={tip}", "commit"),
        ("log", "log", f"{hs}/commits/main", f"{cg}/log/", "log"),
        ("compare", "compare, long range", f"{hs}/compare/{old}...{tip}", f"{cg}/diff/?id={tip}&id2={old}", "diff"),
    ]  # fmt: skip


def measure(page_list: list[tuple], rounds: int) -> dict:
    results: dict = {key: {"hostsite": [], "cgit": [], "errors": [], "bytes": {}} for key, *_ in page_list}
    for rnd in range(rounds + 1):  # round 0 is the warm-up
        for key, _label, hs_url, cg_url, _cl in page_list:
            for side, url in (("hostsite", hs_url), ("cgit", cg_url)):
                try:
                    ms, status, size = fetch(url)
                except OSError as exc:
                    results[key]["errors"].append(f"{side} {url}: {exc}")
                    continue
                if status != 200:
                    results[key]["errors"].append(f"{side} {url}: HTTP {status}")
                    continue
                results[key]["bytes"][side] = size
                if rnd:
                    results[key][side].append(ms)
                else:  # the first fetch of the run: hostsite's caches were empty
                    results[key][f"{side}_first"] = ms
        say(f"round {rnd}/{rounds} done" + (" (warm-up)" if not rnd else ""))
    return results


def print_table(page_list: list[tuple], results: dict, meta: dict) -> dict:
    rows = {}
    print()
    print(f"hostsite browse pages vs cgit: {meta['repository']}")
    print(f"median of {meta['rounds']} after a warm-up, time to the full response over loopback")
    print(
        f"load average before: {meta['loadavg_before']}, after: {meta['loadavg_after']} ({meta['cpus']} CPUs)"
    )
    print()
    head = (
        f"{'page':<42} {'hostsite ms':>11} {'cgit ms':>8} {'ratio':>6}  {'<=3x':>4} {'<=100ms':>7}  verdict"
    )
    print(f"{head}  {'best hs/cgit':>13}  {'first hs/cgit':>15}")
    for key, label, *_rest in page_list:
        r = results[key]
        hs, cg = med(r["hostsite"]), med(r["cgit"])
        rt = ratio(hs, cg)
        ok_ratio = None if rt is None else rt <= MAX_RATIO
        ok_ms = None if hs is None else hs <= MAX_MS
        ok = None if ok_ratio is None or ok_ms is None else ok_ratio and ok_ms
        if key == "compare":  # no cgit page of its own: the 100 ms target only
            ok = ok_ms
        rows[key] = {"label": label, "hostsite_ms": hs, "cgit_ms": cg, "ratio": rt, "verdict": verdict(ok),
                     "samples": r, "ratio_ok": ok_ratio, "ms_ok": ok_ms}  # fmt: skip
        best = f"{fmt(min(r['hostsite'], default=None))}/{fmt(min(r['cgit'], default=None))}"
        first = f"{fmt(r.get('hostsite_first'), '.0f')}/{fmt(r.get('cgit_first'), '.0f')}"
        print(
            f"{label[:42]:<42} {fmt(hs):>11} {fmt(cg):>8} {fmt(rt, '.2f'):>6}  "
            f"{verdict(ok_ratio):>4} {verdict(ok_ms):>7}  {verdict(ok):<7}  {best:>13}  {first:>15}"
        )
        for err in r["errors"][:3]:
            print(f"    error: {err}")
    print()
    return rows


def prepare_master(args, tmp: Path, git: Git, meta: dict) -> Path:
    """The repository whose packs hostsite's copy gets: --repo as it is when it is fully packed
    (else a packed mirror of it), or a generated history, packed once."""
    t0 = time.monotonic()
    if args.repo:
        source = args.repo.expanduser().resolve()
        try:
            loose = git.run("--git-dir", str(source), "count-objects", "-v")
        except MeasureError as exc:
            raise SetupError(f"--repo {source}: {exc}") from None
        meta["repository"] = str(source)
        if "\ncount: 0\n" in f"\n{loose}" and pack_files(source):
            return source
        master = tmp / "master.git"
        say(f"{source} has loose objects: a packed mirror of it")
        git.run("clone", "--mirror", "--quiet", str(source), str(master))
        meta["repository"] += " (mirrored and packed)"
    else:
        master = tmp / "master.git"
        say(f"generating {args.commits} commits (seed {args.seed}) with fast-import")
        generate_browse_history(master, git, commits=args.commits, seed=args.seed)
        meta["repository"] = f"generated, {args.commits} commits (seed {args.seed})"
    say("git repack -ad + commit-graph")
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-q")
    git.run("--git-dir", str(master), "commit-graph", "write", "--reachable")
    meta["setup_repo_s"] = round(time.monotonic() - t0, 1)
    return master


def install(master: Path, repo_dir: Path, git: Git) -> None:
    """hostsite's (empty) repository gets the master's packs, commit-graph and refs: an import
    would fetch and check every object again, minutes on a 200k-commit history."""
    install_packs(master, repo_dir)
    refs = git.run("--git-dir", str(master), "for-each-ref", "--format=%(objectname) %(refname)")
    commands = "".join(
        f"update {name} {oid}\n" for oid, name in (line.split(" ", 1) for line in refs.splitlines())
    )
    git.run("--git-dir", str(repo_dir), "update-ref", "--stdin", input=commands.encode())
    head = git.run("--git-dir", str(master), "symbolic-ref", "HEAD").strip()
    git.run("--git-dir", str(repo_dir), "symbolic-ref", "HEAD", head)
    if not (master / "objects" / "info" / "commit-graph").exists():
        git.run("--git-dir", str(repo_dir), "commit-graph", "write", "--reachable")


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {
        "rounds": args.rounds,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    reason = ensure_debian_packages(not args.no_install, ("nginx", "fcgiwrap", "cgit"))
    if reason:
        raise SetupError(reason)
    master = prepare_master(args, tmp, git, meta)
    meta["commits"] = int(git.run("--git-dir", str(master), "rev-list", "--count", "HEAD").strip())

    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, user, repo create, the master's packs and refs")
    manage(env, "migrate", "--noinput")
    manage(env, "user", "create", "bench")
    head = git.run("--git-dir", str(master), "symbolic-ref", "--short", "HEAD").strip()
    repo_dir = repo_create(env, "bench/big", "--default-branch", head)
    install(master, repo_dir, git)
    say("hostsite: start gunicorn")
    start_web(procs, env, port)
    say("cgit: start nginx + fcgiwrap on hostsite's repository directory")
    cgit_url, _ = setup_cgit(tmp, repo_dir, procs)

    g = ["--git-dir", str(repo_dir)]
    tip = git.run(*g, "rev-parse", "refs/heads/main").strip()
    count = meta["commits"]
    old = git.run(*g, "rev-list", f"--skip={max(count - 2, 0) * 9 // 10}", "-1", "main").strip()
    old = old or tip
    files = git.run(*g, "ls-tree", "-r", "--name-only", "main").split("\n")
    subdir = args.subdir or next((f.rsplit("/", 1)[0] for f in files if f.startswith("src/pkg")), "src")
    raw_file = args.raw_file or next((f for f in files if f.startswith(f"{subdir}/")), files[0])
    meta["pages"] = {"tip": tip, "compare_base": old, "subdir": subdir, "raw_file": raw_file}
    meta["compare_commits"] = int(git.run(*g, "rev-list", "--count", f"{old}..{tip}").strip())
    page_list = pages(
        f"http://127.0.0.1:{port}/bench/big", cgit_url,
        tip=tip, old=old, subdir=subdir, raw_file=raw_file, big=args.big_file,
    )  # fmt: skip
    say(f"measuring {len(page_list)} pages x {args.rounds} rounds (+1 warm-up), interleaved")
    results = measure(page_list, args.rounds)
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = print_table(page_list, results, meta)
    print(f"compare: {meta['compare_commits']} commits between {old[:10]} and {tip[:10]}")
    return {"benchmark": "browse", "meta": meta, "pages": rows}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--commits", type=int, default=200_000, help="commits in the generated history (200000)")
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated history")
    p.add_argument(
        "--repo", type=Path, help="benchmark this repository (mirrored) instead of a generated one"
    )
    p.add_argument("--rounds", type=int, default=5, help="timed rounds after the warm-up (default 5)")
    p.add_argument("--big-file", default=BIG_C, help=f"the large file of the blob page (default {BIG_C})")
    p.add_argument("--subdir", help="the subdirectory tree page (default: the first src/pkg* directory)")
    p.add_argument("--raw-file", help="the raw file page (default: the subdirectory's first file)")
    p.add_argument("--no-install", action="store_true", help="never apt-get install cgit/nginx/fcgiwrap")
    add_run_options(p)
    args = p.parse_args(argv)
    if args.rounds < 1 or args.commits < 2:
        p.error("--rounds must be at least 1 and --commits at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.browse", "hostsite-browse-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
