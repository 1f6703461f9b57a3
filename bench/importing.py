"""Benchmark the web/API import against a plain `git clone --mirror` of the same source.

A benchmark, not a test: it prints a table and PASS/MISS for the target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python -m bench.importing                   # generated 20,000-commit history, 3 rounds
    .venv/bin/python -m bench.importing --rounds 5 --json /tmp/importing.json
    .venv/bin/python -m bench.importing --repo /path/to/repo.git   # mirror an existing repository

What it does, all on loopback and under one temporary directory (hostsite is started as
bench.smart_http starts it, with bench.harness):

1. Generates a deterministic history with `git fast-import` (bench.harness.history's generator:
   text files edited a few lines per commit, an annotated tag every 500 commits), repacked with
   `repack -adf` as gc leaves a repository, or mirrors --repo.
2. Starts hostsite with a private VAR_DIR (SQLite, filesystem broker): gunicorn, as `make run`
   starts it, and one Celery worker (concurrency 1). The source is `bench/source`, imported with
   `manage.py repo create --import`, served by that gunicorn.
3. Each round, in alternating order: `git clone --mirror` of the source's URL (client wall
   time), and an import through the API (`POST /api/v1/repos` with `import_url`, the same URL)
   timed from sending the POST until the import's `finished_at`: the repository is usable
   (refs, HEAD, report; every object through the object checks). The API is polled once a
   second only to learn that it ended (polling faster took CPU from the import being timed).
   The fresh repack the import queues runs afterwards in the worker; its time
   (`fresh_packed_at - finished_at`, from the database) is reported separately, and the next
   measurement starts only once it and the bundle build the import's push queued are done (one
   worker). A third row, not part of the target,
   clones with `transfer.fsckObjects=true`: what the object checks cost a plain client.

Target: clone time / import time >= 0.8 (ratio of medians; the median of the
per-round ratios is printed too). The machine may be shared and noisy: compare the ratios of one
run, not absolute numbers across runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.harness import (
    Git,
    MeasureError,
    Processes,
    add_run_options,
    client_env,
    fmt,
    free_port,
    history,
    hostsite_env,
    hostsite_revision,
    manage,
    med,
    paired,
    run_benchmark,
    say,
    start_web,
    start_worker,
    user_token,
    verdict,
)
from bench.harness.repository import pack_bytes

MIB = 1024 * 1024
RATIO_TARGET = 0.8
DEFAULT_COMMITS = 20_000
_T0 = time.monotonic()


def setup_source(args, tmp: Path, git: Git, meta: dict) -> Path:
    master = tmp / "master.git"
    t0 = time.monotonic()
    if args.repo:
        source = str(args.repo.expanduser().resolve())
        git.run("clone", "--mirror", "--no-local", "--quiet", source, str(master))
        meta["repository"] = f"{args.repo} (mirrored)"
    else:
        say(f"generating {args.commits:,} commits with git fast-import (seed {args.seed})")
        history.generate(master, git, history.HistoryGenerator(args.seed), args.commits)
        git.run("--git-dir", str(master), "repack", "-a", "-d", "-f", "-q")
        meta["repository"] = f"generated (seed {args.seed}, {args.commits:,} commits, tag every 500)"
    meta["generate_s"] = round(time.monotonic() - t0, 1)
    meta["commits"] = int(git.run("--git-dir", str(master), "rev-list", "--count", "--all").strip())
    meta["refs"] = len(git.run("--git-dir", str(master), "for-each-ref", "--format=x").splitlines())
    meta["source_pack_mib"] = round(pack_bytes(master) / MIB, 1)
    return master


def start_hostsite(tmp: Path, master: Path, procs: Processes, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    env["IMPORT_ALLOW_PRIVATE_SOURCES"] = "1"  # the source is on loopback
    # An import is recorded as a push, so it queues a bundle build; built at once (not after
    # the usual 30 s debounce) it is over before the next round, which waits for it.
    env["BUNDLE_DEBOUNCE_SECONDS"] = "0"
    say("hostsite: migrate, user, token, repo create bench/source --import")
    manage(env, "migrate", "--noinput")
    token = user_token(env, git, "bench")
    manage(env, "repo", "create", "bench/source", "--import", str(master))
    say("hostsite: start gunicorn and one Celery worker")
    start_web(procs, env, port, name="web")
    start_worker(procs, env)
    return {"env": env, "port": port, "token": token, "base": f"http://127.0.0.1:{port}"}


def api(hs: dict, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(  # noqa: S310 - http on loopback
        hs["base"] + path,
        method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {hs['token']}", "Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def import_once(hs: dict, name: str, poll: float) -> tuple[float, dict]:
    """Seconds from sending the POST until the import's `finished_at` (same machine, same clock).
    The API is polled only to learn that it ended, and slowly: every poll is a Django request on
    the same two CPUs, and polling every 50 ms cost the import about 10% in a first version."""
    t0 = time.time()
    status, body = api(
        hs, "POST", "/api/v1/repos", {"name": name, "import_url": f"{hs['base']}/bench/source.git"}
    )
    if status != 202:
        raise MeasureError(f"POST /api/v1/repos answered {status}: {body}")
    while True:
        time.sleep(poll)
        status, imp = api(hs, "GET", f"/api/v1/imports/{body['import']['id']}")
        if status == 200 and imp["state"] not in ("queued", "running"):
            break
    if imp["state"] != "done":
        raise MeasureError(f"import {name} ended {imp['state']}: {imp['message']}")
    finished = datetime.datetime.fromisoformat(imp["finished_at"].replace("Z", "+00:00")).timestamp()
    return finished - t0, imp


def server_timings(hs: dict, names: list[str]) -> dict[str, dict]:
    """Per imported repository: import and fresh-repack seconds (database timestamps), pack sizes."""
    script = (
        "import json, time\n"
        "from bundles.models import BundleBuild\n"
        "from repos.models import Repository, RepositoryImport\n"
        f"names = {names!r}\n"
        "out = {}\n"
        "for name in names:\n"
        "    repo = Repository.objects.filter(owner__username='bench', name=name).first()\n"
        "    imp = RepositoryImport.objects.filter(full_name='bench/' + name).order_by('-id').first()\n"
        "    for _ in range(600):\n"
        "        repo.refresh_from_db()\n"
        "        builds = BundleBuild.objects.filter(repository=repo)\n"
        "        if repo.fresh_packed_at and builds.exists() and not builds.filter(finished_at=None).exists():\n"
        "            break\n"
        "        time.sleep(0.5)\n"
        "    packs = sum(p.stat().st_size for p in (repo.disk_path / 'objects' / 'pack').glob('*.pack'))\n"
        "    out[name] = {'import_s': (imp.finished_at - imp.created_at).total_seconds(),\n"
        "                 'repack_s': (repo.fresh_packed_at - imp.finished_at).total_seconds()\n"
        "                 if repo.fresh_packed_at else None, 'pack_mib_after': packs / 2**20,\n"
        "                 'imported_mib': imp.bytes_received / 2**20}\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(manage(hs["env"], "shell", "-c", script).strip().splitlines()[-1])


def wait_for_bundles(hs: dict, name: str) -> None:
    script = (
        "import time\n"
        "from bundles.models import BundleBuild\n"
        "for _ in range(600):\n"
        f"    builds = BundleBuild.objects.filter(repository__owner__username='bench', repository__name={name!r})\n"
        "    if builds.exists() and not builds.filter(finished_at=None).exists():\n"
        "        break\n"
        "    time.sleep(0.5)\n"
    )
    manage(hs["env"], "shell", "-c", script)


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    git = Git(client_env(tmp / "client-home"), [])
    meta = {
        "rounds": args.rounds,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    master = setup_source(args, tmp, git, meta)
    hs = start_hostsite(tmp, master, procs, git)
    url = f"{hs['base']}/bench/source.git"
    git.run("ls-remote", url)  # warm-up, untimed
    wait_for_bundles(hs, "source")  # the source's import queued a build: not during round 1
    samples: dict[str, list] = {"clone": [], "clone_fsck": [], "import": []}
    names, errors, server = [], [], {}
    for rnd in range(args.rounds):
        order = ["clone", "import", "clone_fsck"] if rnd % 2 == 0 else ["import", "clone", "clone_fsck"]
        for kind in order:
            try:
                if kind == "import":
                    name = f"imp{rnd}"
                    seconds, imp = import_once(hs, name, args.poll)
                    names.append(name)
                    say(f"round {rnd + 1}: import {seconds:.2f} s ({imp['bytes_received'] / MIB:.1f} MiB)")
                    # The fresh repack it queued runs on the same (one) worker: let it finish, so
                    # the next measurement does not wait behind it. Its time is reported apart.
                    server.update(server_timings(hs, [name]))
                    repack = fmt(server[name]["repack_s"], ".2f")
                    say(f"round {rnd + 1}: fresh repack {repack} s (server side)")
                else:
                    dest = tmp / f"{kind}-{rnd}.git"
                    extra = ["-c", "transfer.fsckObjects=true"] if kind == "clone_fsck" else []
                    seconds = git.timed(*extra, "clone", "--mirror", "--quiet", url, str(dest))
                    shutil.rmtree(dest, ignore_errors=True)
                    say(f"round {rnd + 1}: {kind} {seconds:.2f} s")
                samples[kind].append(seconds)
            except MeasureError as exc:
                errors.append(f"round {rnd + 1} {kind}: {exc}")
                samples[kind].append(None)
    clone_s, import_s = med(samples["clone"]), med(samples["import"])
    ratio = clone_s / import_s if clone_s and import_s else None
    report = {
        "meta": meta
        | {
            "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "elapsed_s": round(time.monotonic() - _T0, 1),
        },
        "samples": samples,
        "server": server,
        "errors": errors,
        "ratio_clone_over_import": ratio,
        "ratio_paired_median": paired(samples["clone"], samples["import"], lambda c, i: c / i),
        "repack_s_median": med([v["repack_s"] for v in server.values()]),
        "target": {"ratio": RATIO_TARGET, "ok": None if ratio is None else ratio >= RATIO_TARGET},
    }
    print_report(report)
    return report


def print_report(report: dict) -> None:
    meta, s = report["meta"], report["samples"]
    print()
    print(
        f"import vs git clone --mirror: {meta['repository']}; {meta['commits']:,} commits, "
        f"{meta['refs']} refs, source pack {meta['source_pack_mib']} MiB; git {meta['git_version']}, "
        f"{meta['cpus']} CPUs, "
        f"load {meta['loadavg_before']} -> {meta['loadavg_after']}"
    )
    print(f"{'':34}{'median s':>10}{'min':>8}{'max':>8}   per round")
    labels = {
        "clone": "git clone --mirror",
        "import": "API import, until usable",
        "clone_fsck": "clone --mirror, transfer.fsckObjects",
    }
    for kind in ("clone", "import", "clone_fsck"):
        values = [v for v in s[kind] if v is not None]
        rounds = " ".join(fmt(v, ".2f") for v in s[kind])
        print(
            f"{labels[kind]:34}{fmt(med(values), '.2f'):>10}{fmt(min(values, default=None), '.2f'):>8}"
            f"{fmt(max(values, default=None), '.2f'):>8}   {rounds}"
        )
    server = report["server"]
    if server:
        server_import = fmt(med([v["import_s"] for v in server.values()]), ".2f")
        print(f"{'server side: import (queued->done)':34}{server_import:>10}")
        print(
            f"{'fresh repack after the import':34}{fmt(report['repack_s_median'], '.2f'):>10}"
            f"   pack after: {fmt(med([v['pack_mib_after'] for v in server.values()]))} MiB, "
            f"received {fmt(med([v['imported_mib'] for v in server.values()]))} MiB"
        )
    print()
    print(
        f"clone time / import time: {fmt(report['ratio_clone_over_import'], '.2f')} (median of "
        f"per-round ratios {fmt(report['ratio_paired_median'], '.2f')}); target >= {RATIO_TARGET}: "
        f"{verdict(report['target']['ok'])}"
    )
    for error in report["errors"]:
        print(f"error: {error}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=3, help="imports and clones of each kind (default 3)")
    p.add_argument(
        "--commits",
        type=int,
        default=DEFAULT_COMMITS,
        help=f"commits in the generated history (default {DEFAULT_COMMITS:,})",
    )
    p.add_argument(
        "--repo", type=Path, help="benchmark this repository (mirrored) instead of a generated one"
    )
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated history")
    p.add_argument("--poll", type=float, default=1.0, help="seconds between polls of the import's state")
    add_run_options(p)
    args = p.parse_args(argv)
    if args.rounds < 1 or args.commits < 1:
        p.error("--rounds and --commits must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    return run_benchmark("bench.importing", "hostsite-bench-importing-", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
