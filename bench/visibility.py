"""Benchmark what moderation's visibility rule costs: a repository with a taken-down and a
hidden workspace against the same repository with nothing moderated.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.visibility                  # 20,000 commits, 2,000 x 5 refs, 10 rounds
    .venv/bin/python -m bench.visibility --rounds 5 --json /tmp/visibility.json
    .venv/bin/python -m bench.visibility --commits 2000 --users 200 --rounds 3   # a quick look

What it does, all on loopback and under one temporary directory (hostsite is started as
bench/smart_http.py starts it; helpers come from it and from bench/workspaces.py):

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
   - a protocol v2 fetch by id of a canonical commit (want it, have its parent), anonymous;
   - the closure cold (a ref changed and the hostsite-hidden-* cache files deleted, then one
     page request) and warm (the next page request); and in-process, in `manage.py shell`:
     computing it, reading the cache file, the per-process memory, the refs fingerprint;
   - the installed pre-receive hook run directly, with the environment the platform passes
     (`repos.extensions.hook_environment`, which brings HOSTSITE_HIDDEN_PREFIXES on
     bench/moderated only), carol creating a ref at a new commit.
   It also checks that the rule applies: mallory's commit is a 404 page, a refused v2 want and
   a refused push on bench/moderated, and served on bench/plain.

Target: on bench/moderated, carol's pushes (both kinds) and the commit page within 1.2x of the
same on bench/plain (ratio of medians; the median of per-round ratios is printed too).

The machine may be shared and noisy: compare the ratios of one run, not absolute numbers
across runs.
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
import urllib.error
import urllib.request
from pathlib import Path

from bench import workspaces as WS
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
    time_runs,
    verdict,
)
from bench.harness.repository import Pusher, generate_repository

RATIO_TARGET = 1.2
REPOS = ("moderated", "plain")
USERS = ("bench", "carol", "mallory", "dave")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy


# --- setup -------------------------------------------------------------------------------------


def setup_hostsite(tmp: Path, master: Path, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, users and write tokens, staff user, repo create bench/moderated and bench/plain")
    manage(env, "migrate", "--noinput")
    tokens = {}
    for user in USERS:
        manage(env, "user", "create", user)
        tokens[user] = manage(env, "token", "create", user, "--scope", "write").strip()
        if not tokens[user]:
            raise SetupError("manage.py token create printed no token")
        git.secrets.append(tokens[user])
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


def url_for(hs: dict, repo: str, user: str | None = None) -> str:
    auth = f"{user}:{hs['tokens'][user]}@" if user else ""
    return f"http://{auth}127.0.0.1:{hs['port']}/bench/{repo}"


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


# --- requests ----------------------------------------------------------------------------------


def get_page(hs: dict, repo: str, sha: str) -> tuple[int, float]:
    url = f"{url_for(hs, repo)}/commit/{sha}"
    request = urllib.request.Request(url, headers={"User-Agent": "bench"})  # noqa: S310 - loopback http
    t0 = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        status = exc.code
    return status, 1000 * (time.perf_counter() - t0)


def pkt(text: str) -> bytes:
    data = text.encode()
    return f"{len(data) + 4:04x}".encode() + data


def fetch_by_id(hs: dict, repo: str, want: str, have: str) -> tuple[int, bool, float]:
    """Protocol v2 `fetch` of one object by id, anonymous: (status, got a packfile, ms)."""
    body = (pkt("command=fetch\n") + pkt("agent=git/bench\n") + b"0001" + pkt("no-progress\n")
            + pkt(f"want {want}\n") + pkt(f"have {have}\n") + pkt("done\n") + b"0000")  # fmt: skip
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        f"{url_for(hs, repo)}.git/git-upload-pack", data=body, method="POST",
        headers={"Content-Type": "application/x-git-upload-pack-request", "Git-Protocol": "version=2",
                 "Accept": "application/x-git-upload-pack-result", "User-Agent": "git/bench"},
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        with _OPENER.open(request, timeout=120) as response:
            data = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        data = exc.read()
        status = exc.code
    return status, b"packfile" in data, 1000 * (time.perf_counter() - t0)


def push(git: Git, pusher: Pusher, hs: dict, repo: str, kind: str, i: int) -> float:
    target = f"refs/users/carol/b{i}" if kind == "workspace" else "refs/for/main"
    commit = pusher.commit(f"{kind}-{repo}-{i}")
    return 1000 * git.timed("--git-dir", str(pusher.work), "push", "--quiet", url_for(hs, repo, "carol") + ".git",
                            f"{commit}:{target}", timeout=600)  # fmt: skip


def touch_ref(git: Git, gitdir: Path, value: str) -> None:
    """Change a ref (the closure's cache key) and drop the cache files: the next reader computes."""
    git.run("--git-dir", str(gitdir), "update-ref", "refs/bench/cold", value)
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
        "push_workspace": "carol push -> refs/users/carol/b<i>",
        "push_nameless": "carol nameless push -> refs/for/main",
        "page_after_push": "commit page right after her push (recomputes)",
        "page": "GET commit page, anonymous, refs unchanged",
        "fetch": "v2 fetch by id (want + have parent), anonymous",
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
            touch_ref(git, hs["dirs"][repo], canon["tips"][rnd % 2])
            timed("page_cold", repo, page_ok, get_page, hs, repo, sha)
            timed("page_warm", repo, page_ok, get_page, hs, repo, sha)
        say(f"round {rnd + 1}/{rounds}: " + ", ".join(
            f"{name} {fmt(samples[name]['moderated'][-1], '.0f')}/{fmt(samples[name]['plain'][-1], '.0f')}"
            for name in ("push_workspace", "push_nameless", "page", "fetch", "page_cold")) + " ms (mod/plain)")  # fmt: skip
    return {
        name: pair(samples[name]["moderated"], samples[name]["plain"], what) for name, what in names.items()
    }, errors


CLOSURE_CODE = """
import json, time
from pathlib import Path
from django.contrib.auth.models import AnonymousUser
from repos.models import Repository
from workspaces import visibility as v
repo = Repository.objects.get(owner__username='bench', name='moderated')
gitdir = Path(repo.disk_path)
prefixes = v.hidden_prefixes(repo, AnonymousUser())
out = {'prefixes': prefixes, 'compute': [], 'file': [], 'memory': [], 'fingerprint': []}
for i in range(RUNS):
    for p in gitdir.glob(v.CACHE_PREFIX + '*'):
        p.unlink()
    for key, fn in (('compute', v.closure), ('file', v.closure), ('memory', v.closure),
                    ('fingerprint', lambda g, p: v.refs_fingerprint(g))):
        if key != 'memory':
            v._MEMORY.clear()
        t0 = time.perf_counter()
        found = fn(gitdir, prefixes)
        out[key].append(1000 * (time.perf_counter() - t0))
out['objects'] = len(v.closure(gitdir, prefixes))
print(json.dumps(out))
"""


def measure_closure(hs: dict, runs: int) -> dict:
    out = json.loads(
        manage(hs["env"], "shell", "-c", CLOSURE_CODE.replace("RUNS", str(runs))).strip().splitlines()[-1]
    )
    return {"prefixes": out["prefixes"], "objects": out["objects"], "runs": runs,
            **{f"{key}_median_ms": statistics.median(out[key]) for key in ("compute", "file", "memory", "fingerprint")}}  # fmt: skip


HOOK_ENV_CODE = """
import json
from django.contrib.auth import get_user_model
from repos import extensions
from repos.models import Repository
carol = get_user_model().objects.get(username='carol')
out = {}
for name in ('moderated', 'plain'):
    repo = Repository.objects.get(owner__username='bench', name=name)
    env = extensions.hook_environment(repo, carol, 'reader', [('0' * 40, '1' * 40, 'refs/users/carol/hook')])
    out[name] = dict(env, HOSTSITE_REPO_ID=str(repo.pk), HOSTSITE_PUSHER_ID=str(carol.pk))
print(json.dumps(out))
"""


def measure_hooks(hs: dict, git: Git, tmp: Path, canon: dict, runs: int) -> dict:
    hook = hs["hooks_dir"] / "pre-receive"
    if not os.access(hook, os.X_OK):
        raise SetupError(f"{hook} is missing or not executable")
    platform_env = json.loads(manage(hs["env"], "shell", "-c", HOOK_ENV_CODE).strip().splitlines()[-1])
    envs, news = {}, {}
    for repo in REPOS:
        # The pushed commit, as receive-pack would have it: in a quarantine object directory
        # whose alternate is the repository's, no ref on it (the hook's fast path depends on it).
        quarantine = tmp / f"quarantine-{repo}"
        quarantine.mkdir(exist_ok=True)
        objects = str(Path(hs["dirs"][repo]) / "objects")
        q_env = {"GIT_OBJECT_DIRECTORY": str(quarantine), "GIT_ALTERNATE_OBJECT_DIRECTORIES": objects,
                 "GIT_QUARANTINE_PATH": str(quarantine)}  # fmt: skip
        news[repo] = Pusher(Git(git.env | q_env, git.secrets), hs["dirs"][repo]).commit(f"hook-{repo}")
        envs[repo] = platform_env[repo] | q_env | {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOSTSITE_PUSHER": "carol", "HOSTSITE_ROLE": "reader",
            "HOSTSITE_REF_UPDATES_FILE": str(tmp / f"hook-updates-{repo}"), "GIT_DIR": str(hs["dirs"][repo]),
        }  # fmt: skip
    cases = {
        "carol creates a ref at a new commit, bench/moderated": ("moderated", news["moderated"], 0),
        "same, bench/plain": ("plain", news["plain"], 0),
        "carol creates a ref at mallory's tip (refused), moderated": ("moderated", canon["mallory"], 1),
    }
    samples = {name: [] for name in cases}
    wrong: dict[str, str] = {}
    names = list(cases)
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):
            repo, new, expect = cases[name]
            line = f"{ZERO_OID} {new} refs/users/carol/hook\n".encode()
            r = time_runs([str(hook)], env=envs[repo], n=1, stdin=line, cwd=hs["dirs"][repo])
            samples[name].append(r["samples_ms"][0])
            if bool(r["failures"]) != bool(expect):
                wrong[name] = r["last_error"] or "exited 0"
    results = {name: {"median_ms": statistics.median(s), "min_ms": min(s), "max_ms": max(s), "n": len(s),
                      "unexpected": wrong.get(name, "")} for name, s in samples.items()}  # fmt: skip
    # Attribution: the hook's walk, as it runs it, alone.
    walk = [GIT, "rev-list", "--objects", "--no-object-names", "--stdin", "--not", "--branches", "--tags"]
    walked = time_runs(
        walk,
        env=envs["moderated"],
        n=runs,
        cwd=hs["dirs"]["moderated"],
        stdin=f"{news['moderated']}\n".encode(),
    )
    results["its rev-list walk alone (<new> --not branches, tags), moderated"] = {
        k: walked[k] for k in ("median_ms", "min_ms", "max_ms", "n")
    }
    floor = time_runs([PY, "-IS", "-c", "pass"], env=envs["plain"], n=runs)
    results["python -IS -c pass (floor)"] = {k: floor[k] for k in ("median_ms", "min_ms", "max_ms", "n")}
    results["env_moderated_has_hidden_prefixes"] = "HOSTSITE_HIDDEN_PREFIXES" in platform_env["moderated"]
    results["env_plain_has_hidden_prefixes"] = "HOSTSITE_HIDDEN_PREFIXES" in platform_env["plain"]
    return results


def check_rule(hs: dict, canon: dict) -> dict:
    m, parent = canon["mallory"], canon["mallory_parent"]
    return {repo: {"page_status": get_page(hs, repo, m)[0], "fetch": fetch_by_id(hs, repo, m, parent)[:2]}
            for repo in REPOS}  # fmt: skip


# --- report ------------------------------------------------------------------------------------


def build_targets(rows: dict) -> dict:
    out = {}
    for key in ("push_workspace", "push_nameless", "page"):
        ratio = rows[key]["ratio"]
        out[f"{key}_ratio"] = {"value": ratio, "target": f"<= {RATIO_TARGET}",
                               "ok": None if ratio is None else ratio <= RATIO_TARGET}  # fmt: skip
    return out


def print_report(report: dict) -> None:
    meta, rows, closure, hooks, rule, targets = (
        report[k] for k in ("meta", "rounds", "closure", "hooks", "rule", "targets")
    )
    pop = meta["populate"]
    out = ["", f"hostsite visibility benchmark: {meta['commits']:,} commits; {pop['workspace_refs']:,} workspace refs "
           f"({meta['users']:,} users x 5, {pop['ref_format']}); mallory's {meta['mallory_commits']} commits taken down, "
           f"dave's {meta['dave_commits']} hidden (bench/moderated only)",
           f"  git {meta['git_version']}; hostsite {meta['hostsite_revision']}; {meta['cpus']} CPUs; "
           f"load avg before {meta['loadavg_before']}, after {meta['loadavg_after']}",
           f"  closure for anonymous and carol: {closure['objects']:,} objects; prefixes {' '.join(closure['prefixes'])}",
           "", f"median of {meta['rounds']} rounds (pages and fetches 3 per round), moderated and plain interleaved",
           f"  {'':<50}{'moderated':>10}{'plain':>8}{'ratio':>7}{'paired':>8}  ms"]  # fmt: skip
    for key, r in rows.items():
        line = (f"  {r['what']:<50}{fmt(r['moderated_median_ms'], '.0f'):>10}{fmt(r['plain_median_ms'], '.0f'):>8}"
                f"{fmt(r['ratio'], '.2f'):>7}{fmt(r['paired_ratio'], '.2f'):>8}")  # fmt: skip
        if f"{key}_ratio" in targets:
            line += f"   target <= {RATIO_TARGET}x  {verdict(targets[f'{key}_ratio']['ok'])}"
        out.append(line)
    if report["errors"]:
        out.append(f"  {len(report['errors'])} failed or unexpected requests:")
        out.extend(f"    {e[:300]}" for e in report["errors"][:10])
    out += ["", f"closure in-process (manage.py shell, median of {closure['runs']}): compute "
            f"{closure['compute_median_ms']:.1f} ms, read the cache file {closure['file_median_ms']:.1f} ms, "
            f"per-process memory {closure['memory_median_ms']:.2f} ms (of which the refs fingerprint "
            f"{closure['fingerprint_median_ms']:.2f} ms)"]  # fmt: skip
    out += ["", f"pre-receive hook run directly, the platform's environment (N={meta['hook_runs']}, interleaved); "
            f"HOSTSITE_HIDDEN_PREFIXES given: moderated {hooks['env_moderated_has_hidden_prefixes']}, "
            f"plain {hooks['env_plain_has_hidden_prefixes']}",
            f"  {'':<60}{'median':>8}{'min':>8}{'max':>8}  ms"]  # fmt: skip
    for name, h in hooks.items():
        if isinstance(h, dict):
            line = f"  {name:<60}{h['median_ms']:>8.1f}{h['min_ms']:>8.1f}{h['max_ms']:>8.1f}"
            if h.get("unexpected"):
                line += f"  UNEXPECTED: {h['unexpected'][:200]}"
            out.append(line)
    out += ["", "the rule applies (mallory's commit, anonymous): " + "; ".join(
        f"bench/{repo} page {r['page_status']}, v2 fetch {r['fetch'][0]}{' with a pack' if r['fetch'][1] else ''}"
        for repo, r in rule.items())]  # fmt: skip
    out += ["", "targets: " + ", ".join(f"{k} {fmt(v['value'], '.2f')} {verdict(v['ok'])}" for k, v in targets.items())
            + f"   (whole run {meta['elapsed_s']:.0f} s)"]  # fmt: skip
    print("\n".join(out), flush=True)


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
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--tmpdir", type=Path, help="where the temporary directory goes (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, repositories)")
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
        meta["populate"] = WS.populate_workspaces(git, hs["dirs"][repo], users=args.users, per_user=5)
    WS.start_gunicorn(hs, procs)

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
    for repo in REPOS:
        for user, refspecs in (("mallory", [f"{mallory[-1]}:refs/users/mallory/w1",
                                            f"{mallory[len(mallory) // 2]}:refs/users/mallory/w2"]),
                               ("dave", [f"{dave[-1]}:refs/users/dave/w1"])):  # fmt: skip
            try:
                git.run(*gd, "push", "--quiet", url_for(hs, repo, user) + ".git", *refspecs, timeout=600)
            except MeasureError as exc:
                raise SetupError(
                    f"{user}'s push to bench/{repo} failed: {exc}\n{procs.log_tail('hostsite')}"
                ) from None
    say("moderation on bench/moderated: mallory's workspace taken down, dave's hidden")
    moderate(hs)
    moved = git.run(
        "--git-dir", str(hs["dirs"]["moderated"]), "for-each-ref", "--format=%(refname)", "refs/takedown/"
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
    args = parse_args(argv)
    return run_benchmark(
        "bench.visibility", "hostsite-bench-vis-", args, lambda tmp, procs: run(args, tmp, procs)
    )


if __name__ == "__main__":
    sys.exit(main())
