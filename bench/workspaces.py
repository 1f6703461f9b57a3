"""Benchmark workspaces at scale: a repository with 10,000 users x 10 workspace refs.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.workspaces                  # 100,000 workspace refs, 10 rounds
    .venv/bin/python -m bench.workspaces --rounds 5 --json /tmp/workspaces.json
    .venv/bin/python -m bench.workspaces --users 1000     # a smaller repository, for a quick look

What it does, all on loopback and under one temporary directory (hostsite is started as
bench/smart_http.py starts it, whose helpers this script imports):

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
    GIT,
    PY,
    ZERO_OID,
    Git,
    MeasureError,
    Processes,
    SetupError,
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
    time_runs,
    verdict,
)
from bench.harness.repository import Pusher, generate_repository

ADVERTISEMENT_TARGET_BYTES = 10_000  # "at most 10 KB"
ISSUE_UNHIDDEN_BYTES = 7.3e6  # "7.3 MB without hiding, as measured" in the issue
HOOK_TARGET_MS = 30.0
PUSH_RATIO_TARGET = 1.2

REPOS = ("ws", "plain")


# --- setup -------------------------------------------------------------------------------------


def setup_hostsite(tmp: Path, master: Path, procs: Processes, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, users bench and carol, write tokens, repo create bench/ws and bench/plain")
    manage(env, "migrate", "--noinput")
    tokens = {}
    for user in ("bench", "carol"):
        manage(env, "user", "create", user)
        token = manage(env, "token", "create", user, "--scope", "write").strip()
        if not token:
            raise SetupError("manage.py token create printed no token")
        git.secrets.append(token)
        tokens[user] = token
    dirs = {key: repo_create(env, f"bench/{key}", "--import", str(master)) for key in REPOS}
    return {"env": env, "port": port, "var_dir": var_dir, "tokens": tokens, "dirs": dirs,
            "hooks_dir": dirs["ws"].parent.parent / ".hooks"}  # fmt: skip


def start_gunicorn(hs: dict, procs: Processes) -> None:
    say("hostsite: start gunicorn")
    start_web(procs, hs["env"], hs["port"])


def ref_format(git: Git, repo: Path) -> str:
    """files or reftable. `rev-parse --show-ref-format` exists from git 2.45; older gits echo
    the option back, and can only have the files backend unless extensions.refStorage says so."""
    out = git.run("--git-dir", str(repo), "rev-parse", "--show-ref-format").strip()
    if out in ("files", "reftable"):
        return out
    try:
        return git.run("--git-dir", str(repo), "config", "--get", "extensions.refStorage").strip() or "files"
    except MeasureError:
        return "files"


def populate_workspaces(git: Git, repo: Path, *, users: int, per_user: int, batch: int = 10_000) -> dict:
    """users x per_user refs refs/users/uNNNNN/rK, written with update-ref --stdin (the
    repository's own config applies: a reflog per ref, as pushes would leave), then packed."""
    commits = git.run("--git-dir", str(repo), "rev-list", "--all").split()
    if not commits:
        raise SetupError(f"{repo} has no commits")
    width = max(5, len(str(users - 1)))
    lines = [
        f"create refs/users/u{u:0{width}d}/r{k} {commits[(u * per_user + k) % len(commits)]}\n"
        for u in range(users)
        for k in range(per_user)
    ]
    fmt_ = ref_format(git, repo)
    t0 = time.monotonic()
    for i in range(0, len(lines), batch):
        try:
            git.run(
                "--git-dir", str(repo), "update-ref", "--stdin", input="".join(lines[i : i + batch]).encode()
            )
        except MeasureError as exc:
            raise SetupError(f"writing workspace refs: {exc}") from None
    written = time.monotonic() - t0
    t0 = time.monotonic()
    # files: everything into packed-refs, loose refs pruned. reftable: compact the tables the
    # batches wrote into one (what auto-compaction converges to).
    args = ["pack-refs", "--all", "--prune"] if fmt_ == "files" else ["pack-refs"]
    try:
        git.run("--git-dir", str(repo), *args)
    except MeasureError as exc:
        raise SetupError(f"git {' '.join(args)}: {exc}") from None
    packed = time.monotonic() - t0
    count = len(git.run("--git-dir", str(repo), "for-each-ref", "--format=x", "refs/users/").splitlines())
    if count != len(lines):
        raise SetupError(f"expected {len(lines)} workspace refs in {repo}, found {count}")
    return {"ref_format": fmt_, "workspace_refs": count, "commits_pointed_at": min(len(commits), len(lines)),
            "write_s": round(written, 1), "pack_s": round(packed, 1), "pack_command": " ".join(args)}  # fmt: skip


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
        "workspace_refs": sum(r.startswith(b"refs/users/") for r in refs),
        "others_workspace_refs": sum(r.startswith(b"refs/users/") and not r.startswith(b"refs/users/carol/")
                                     and not r.startswith(b"refs/users/bench/") for r in refs),
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


def pct(values: list[float], q: int) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summarize(times: list[float]) -> dict:
    return {"n": len(times), "median_ms": statistics.median(times), "p90_ms": pct(times, 90),
            "min_ms": min(times), "max_ms": max(times)}  # fmt: skip


def measure_hooks(hs: dict, git: Git, runs: int) -> dict:
    hook = hs["hooks_dir"] / "pre-receive"
    if not os.access(hook, os.X_OK):
        raise SetupError(f"{hook} is missing or not executable")
    ws = hs["dirs"]["ws"]
    commit = git.run("--git-dir", str(ws), "rev-parse", "main~5").strip()
    main_new = git.run("--git-dir", str(ws), "rev-parse", "main").strip()
    main_old = git.run("--git-dir", str(ws), "rev-parse", "main~1").strip()

    def env(repo: str, pusher: str, role: str, ref_count: int | None = None) -> dict[str, str]:
        # What repos/smarthttp.py and workspaces/gitconfig.py give the hook for these rules;
        # for a push that creates workspace refs the view also passes the pusher's ref count.
        extra = {} if ref_count is None else {"HOSTSITE_WORKSPACE_REF_COUNT": str(ref_count)}
        return extra | {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOSTSITE_PUSHER": pusher,
            "HOSTSITE_ROLE": role,
            "HOSTSITE_REPO_ID": "1",
            "HOSTSITE_DEFAULT_BRANCH": "main",
            "HOSTSITE_PROTECTED": "",
            "HOSTSITE_MAINTAINERS_EDIT": "1",
            "HOSTSITE_FROZEN": "",
            "HOSTSITE_WORKSPACE_REF_LIMIT": "1000",
            "GIT_DIR": str(hs["dirs"][repo]),
        }

    cases = {
        "carol creates refs/users/carol/new-<i>, bench/ws": (
            "ws", env("ws", "carol", "reader", 0), lambda i: f"{ZERO_OID} {commit} refs/users/carol/new-{i}\n"),
        "same, bench/plain (no workspace refs)": (
            "plain", env("plain", "carol", "reader", 0), lambda i: f"{ZERO_OID} {commit} refs/users/carol/new-{i}\n"),
        "bench (admin) fast-forwards main, bench/ws": (
            "ws", env("ws", "bench", "admin"), lambda i: f"{main_old} {main_new} refs/heads/main\n"),
    }  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in cases}
    failures: dict[str, int] = dict.fromkeys(cases, 0)
    last_error: dict[str, str] = dict.fromkeys(cases, "")
    names = list(cases)
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):  # interleaved, order alternating
            repo, henv, line = cases[name]
            r = time_runs([str(hook)], env=henv, n=1, stdin=line(i).encode(), cwd=hs["dirs"][repo])
            samples[name].append(r["samples_ms"][0])
            if r["failures"]:
                failures[name] += 1
                last_error[name] = r["last_error"]
    results = {}
    for name in names:
        results[name] = summarize(samples[name]) | {
            "failures": failures[name],
            "last_error": last_error[name],
        }
    floor = time_runs([PY, "-IS", "-c", "pass"], env=cases[names[0]][1], n=runs)
    results["python -IS -c pass (floor)"] = summarize(floor["samples_ms"]) | {"failures": floor["failures"]}
    fer = time_runs([GIT, "for-each-ref", "--format=x", "refs/users/carol/"], env=cases[names[0]][1],
                    n=runs, cwd=ws)  # fmt: skip
    results["git for-each-ref refs/users/carol/, bench/ws"] = summarize(fer["samples_ms"]) | {
        "failures": fer["failures"]
    }
    return results


# --- where the time goes -----------------------------------------------------------------------


def measure_git_steps(hs: dict, git: Git, tmp: Path, runs: int) -> dict:
    """The server-side git steps of a contributor's push that could read every ref, run
    directly on both repositories with the platform's clean git environment, as the platform
    runs them now and (indented, for reference) as they ran before. Attribution, not targets."""
    shown = ["refs/heads/", "refs/tags/", "refs/users/carol/"]
    hide_post = ["-c", "receive.hideRefs=refs/users/", "-c", "receive.hideRefs=!refs/users/carol/"]
    hide_get = ["-c", "receive.hideRefs=refs/", *(x for p in shown for x in ("-c", f"receive.hideRefs=!{p}"))]
    narrow = ["-c", "core.alternateRefsPrefixes=" + " ".join(shown)]
    main = git.run("--git-dir", str(hs["dirs"]["ws"]), "rev-parse", "main").strip()
    quarantine = tmp / "quarantine"
    (quarantine / "pack").mkdir(parents=True, exist_ok=True)
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "git-home"), "LANG": "C",
            "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip

    def in_quarantine(repo: Path) -> dict[str, str]:
        # What receive-pack gives its connectivity check: the pushed objects in a quarantine
        # directory, the repository's own objects as its alternate.
        return base | {"GIT_DIR": str(repo), "GIT_OBJECT_DIRECTORY": str(quarantine),
                       "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / "objects"),
                       "GIT_QUARANTINE_PATH": str(quarantine)}  # fmt: skip

    def connectivity(config: list[str]):
        return lambda repo: (
            [GIT, *hide_post, *config, "rev-list", "--objects", "--stdin", "--not", "--exclude-hidden=receive",
             "--all", "--quiet", "--alternate-refs"], in_quarantine(repo), f"{main}\n".encode())  # fmt: skip

    steps = {
        "advertisement: for-each-ref by prefix (GET)": lambda repo: (
            [GIT, "--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)", *shown], base, None),
        "  before: receive-pack --advertise-refs, hideRefs": lambda repo: (
            [GIT, *hide_get, "receive-pack", "--stateless-rpc", "--advertise-refs", str(repo)], base, None),
        "connectivity check, as receive-pack runs it (POST)": connectivity(narrow),
        "  before: without core.alternateRefsPrefixes": connectivity([]),
        "push record: for-each-ref by prefix, rev-list --stdin": lambda repo: (
            [GIT, "--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)", *shown], base, None),
        "  before: rev-list --glob (matches every ref)": lambda repo: (
            [GIT, "--git-dir", str(repo), "rev-list", "--topo-order", "--reverse", main, "--not",
             *(x for p in shown for x in ("--exclude=refs/users/carol/b0", f"--glob={p}*"))], base, None),
    }  # fmt: skip
    samples = {name: {repo: [] for repo in REPOS} for name in steps}
    failures: dict[str, str] = {}
    for i in range(runs):
        for name, step in steps.items():
            for repo in REPOS if i % 2 == 0 else tuple(reversed(REPOS)):
                argv, env, stdin = step(hs["dirs"][repo])
                r = time_runs(argv, env=env, n=1, stdin=stdin)
                samples[name][repo].append(r["samples_ms"][0])
                if r["failures"]:
                    failures[name] = r["last_error"]
    results = {}
    for name in steps:
        ws, plain = statistics.median(samples[name]["ws"]), statistics.median(samples[name]["plain"])
        results[name] = {"ws_median_ms": ws, "plain_median_ms": plain, "extra_ms": ws - plain, "n": runs,
                         "error": failures.get(name, "")}  # fmt: skip
    return results


# --- pushes ------------------------------------------------------------------------------------

PUSH_KINDS = {
    # kind: (pusher, refspec target, what)
    "carol_workspace": ("carol", "refs/users/carol/b{i}", "carol -> refs/users/carol/b<i>"),
    "carol_nameless": ("carol", "refs/for/main", "carol -> refs/for/main (nameless)"),
    "admin_workspace": ("bench", "refs/users/bench/b{i}", "bench (admin) -> refs/users/bench/b<i>"),
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


# --- report ------------------------------------------------------------------------------------


def build_targets(adv: dict, hooks: dict, pushes: dict) -> dict:
    carol = adv["carol@ws"]
    carol_ok = carol["bytes"] <= ADVERTISEMENT_TARGET_BYTES and carol["others_workspace_refs"] == 0
    hook = hooks["carol creates refs/users/carol/new-<i>, bench/ws"]
    ratio = pushes["kinds"]["carol_workspace"]["ratio"]
    return {
        "advertisement_bytes_contributor": {"value": carol["bytes"], "target": f"<= {ADVERTISEMENT_TARGET_BYTES}",
                                            "ok": carol_ok},
        "pre_receive_median_ms": {"value": hook["median_ms"], "target": f"<= {HOOK_TARGET_MS:.0f}",
                                  "ok": hook["median_ms"] <= HOOK_TARGET_MS and not hook["failures"]},
        "push_latency_ratio_ws_vs_plain": {"value": ratio, "target": f"<= {PUSH_RATIO_TARGET}",
                                           "ok": None if ratio is None else ratio <= PUSH_RATIO_TARGET},
    }  # fmt: skip


def print_report(report: dict) -> None:
    meta, adv, hooks, pushes, targets = (
        report[k] for k in ("meta", "advertisements", "hooks", "pushes", "targets")
    )
    pop = meta["populate"]
    out = [""]
    out.append(f"hostsite workspaces benchmark: bench/ws holds {meta['users']:,} users x {meta['refs_per_user']} "
               f"workspace refs = {pop['workspace_refs']:,} refs over {pop['commits_pointed_at']} commits")  # fmt: skip
    out.append(f"  ref storage: {pop['ref_format']} ({pop['pack_command']}); written in {pop['write_s']} s, "
               f"packed in {pop['pack_s']} s; bench/plain: the same repository without them")  # fmt: skip
    out.append(f"  repository: {meta['repository']}; git {meta['git_version']}; hostsite "
               f"{meta['hostsite_revision']}; {meta['cpus']} CPUs; load avg before {meta['loadavg_before']}")  # fmt: skip
    out.append("")
    out.append(
        f"push advertisement, GET info/refs?service=git-receive-pack ({meta['adv_reps']} fetches each)"
    )
    out.append(f"  {'':<44}{'bytes':>12}{'refs':>9}{'refs/users/':>13}{'median ms':>11}")
    labels = {
        "carol@ws": "carol (reader) on bench/ws",
        "bench@ws": "bench (admin) on bench/ws: unhidden",
        "carol@plain": "carol (reader) on bench/plain",
        "bench@plain": "bench (admin) on bench/plain",
    }
    for key, label in labels.items():
        a = adv[key]
        out.append(
            f"  {label:<44}{a['bytes']:>12,}{a['refs']:>9,}{a['workspace_refs']:>13,}{a['median_ms']:>11.0f}"
        )
    t = targets["advertisement_bytes_contributor"]
    unhidden = adv["bench@ws"]["bytes"]
    out.append(f"  contributor advertisement {adv['carol@ws']['bytes']:,} bytes, target <= {ADVERTISEMENT_TARGET_BYTES:,}"
               f"  {verdict(t['ok'])}   (without hiding: {unhidden / 1e6:.2f} MB here, "
               f"{ISSUE_UNHIDDEN_BYTES / 1e6:.1f} MB in the issue)")  # fmt: skip
    out.append("")
    out.append(f"pre-receive hook, run directly with the platform's HOSTSITE_* environment (N={meta['hook_runs']}, "
               "interleaved)")  # fmt: skip
    out.append(f"  {'':<52}{'median':>8}{'p90':>8}{'min':>8}{'max':>8}  ms")
    for name, h in hooks.items():
        line = (
            f"  {name:<52}{h['median_ms']:>8.1f}{fmt(h['p90_ms']):>8}{h['min_ms']:>8.1f}{h['max_ms']:>8.1f}"
        )
        if name.startswith("carol creates"):
            line += f"   target <= {HOOK_TARGET_MS:.0f} ms  {verdict(targets['pre_receive_median_ms']['ok'])}"
        if h.get("failures"):
            line += f"  ({h['failures']} runs exited non-zero: {h.get('last_error', '')[:200]})"
        out.append(line)
    floor = hooks.get("python -IS -c pass (floor)", {}).get("median_ms")
    if floor:
        # The target is absolute, so a loaded machine misses it: the floor shows how loaded.
        out.append("  above the interpreter floor: " + ", ".join(
            f"{label} {hooks[name]['median_ms'] - floor:+.1f}" for label, name in (
                ("bench/ws", "carol creates refs/users/carol/new-<i>, bench/ws"),
                ("bench/plain", "same, bench/plain (no workspace refs)"),
                ("admin main", "bench (admin) fast-forwards main, bench/ws"))) + " ms")  # fmt: skip
    out.append("")
    out.append(f"end-to-end push over HTTP, wall time of `git push` ({meta['rounds']} rounds; ws and plain "
               "interleaved, order alternating)")  # fmt: skip
    out.append(f"  {'':<44}{'bench/ws ms':>12}{'plain ms':>10}{'ratio':>8}{'paired':>8}")
    for kind, p in pushes["kinds"].items():
        line = (f"  {p['what']:<44}{fmt(p['ws_median_ms'], '.0f'):>12}{fmt(p['plain_median_ms'], '.0f'):>10}"
                f"{fmt(p['ratio'], '.2f'):>8}{fmt(p['paired_ratio'], '.2f'):>8}")  # fmt: skip
        if kind == "carol_workspace":
            line += f"   target <= {PUSH_RATIO_TARGET}x  {verdict(targets['push_latency_ratio_ws_vs_plain']['ok'])}"
        out.append(line)
    if pushes["errors"]:
        out.append(f"  {len(pushes['errors'])} failed pushes (excluded from medians):")
        out.extend(f"    {e[:400]}" for e in pushes["errors"][:10])
    steps = report.get("git_steps")
    if steps:
        out.append("")
        n = next(iter(steps.values()))["n"]
        out.append(f"where the extra time goes: server-side git steps of a push that could read every ref, run "
                   f"directly (N={n}, not targets; indented: how they ran before)")  # fmt: skip
        out.append(f"  {'':<56}{'bench/ws':>10}{'plain':>8}{'extra':>8}  ms")
        for name, s in steps.items():
            line = f"  {name:<56}{s['ws_median_ms']:>10.1f}{s['plain_median_ms']:>8.1f}{s['extra_ms']:>+8.1f}"
            if s["error"]:
                line += f"  (failed: {s['error'][:200]})"
            out.append(line)
    out.append("")
    out.append("targets: " + ", ".join(f"{k} {verdict(v['ok'])}" for k, v in targets.items())
               + f"   (whole run {meta['elapsed_s']:.0f} s)")  # fmt: skip
    print("\n".join(out), flush=True)


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
    p.add_argument("--no-nameless", action="store_true", help="skip the refs/for/main pushes")
    p.add_argument("--no-admin-push", action="store_true", help="skip the admin's (unhidden) pushes")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--tmpdir", type=Path, help="where the temporary directory goes (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, repositories)")
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
    start_gunicorn(hs, procs)

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


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_benchmark(
        "bench.workspaces", "hostsite-bench-ws-", args, lambda tmp, procs: run(args, tmp, procs)
    )


if __name__ == "__main__":
    sys.exit(main())
