"""bench.bundles' setup: the repository (generated or mirrored), hostsite with an origin and a
bundle server, the bundle build with its step times, the pack check, and the day of commits
that puts the bundles one day behind."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from bench.bundles_report import MIN_COMMITS
from bench.harness import (
    GIT,
    MIB,
    Git,
    MeasureError,
    Processes,
    SetupError,
    free_port,
    hostsite_env,
    manage,
    repo_create,
    say,
    start_web,
    user_token,
)
from bench.harness.history import Buffered, HistoryGenerator, default_branch, fast_import, generate


def setup_repository(args, tmp: Path, git: Git, meta: dict) -> tuple[Path, HistoryGenerator | None]:
    master = tmp / "master.git"
    t0 = time.monotonic()
    gen = None
    if args.repo:
        source = args.repo.expanduser().resolve()
        say(f"mirroring {source}")
        try:
            git.run("clone", "--mirror", "--no-local", "--quiet", str(source), str(master))
        except MeasureError as exc:
            raise SetupError(f"--repo {source}: {exc}") from None
        meta["repository"] = f"{source} (mirrored)"
    else:
        say(f"generating {args.commits:,} commits with git fast-import (seed {args.seed})")
        gen = HistoryGenerator(args.seed)
        generate(master, git, gen, args.commits)
        # fast-import deltas each blob only against the blob written just before it; a real
        # repository has been through gc's delta search, so give it one (`repack -adf`).
        say("  git repack -a -d -f (a fresh delta search, as gc would have done)")
        git.run("--git-dir", str(master), "repack", "-a", "-d", "-f", "-q")
        meta["repository"] = (
            f"generated (seed {args.seed}, {args.commits:,} commits, text files, annotated tag every 500)"
        )
    meta["generate_s"] = round(time.monotonic() - t0, 1)
    commits = int(git.run("--git-dir", str(master), "rev-list", "--count", "--all").strip())
    meta["commits"] = commits
    meta["refs"] = len(git.run("--git-dir", str(master), "for-each-ref", "--format=x").splitlines())
    if commits < MIN_COMMITS:
        say(f"note: {commits:,} commits, below the {MIN_COMMITS:,} the issue asks for")
    say(f"  {commits:,} commits, {meta['refs']} refs in {meta['generate_s']} s")
    return master, gen


def setup_hostsite(tmp: Path, master: Path, git: Git) -> dict:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    origin_port, bundle_port = free_port(), free_port()
    env = hostsite_env(var_dir, origin_port)
    env["BUNDLE_DELETE_GRACE_HOURS"] = "24"
    say("hostsite: migrate, user, token, repo create bench/big --import (may take a while)")
    manage(env, "migrate", "--noinput")
    token = user_token(env, git, "bench")
    t0 = time.monotonic()
    repo_dir = repo_create(env, "bench/big", "--import", str(master))
    import_s = time.monotonic() - t0
    # As repos/maintenance.py leaves a repository: one pack with a bitmap, and a commit-graph.
    say(
        f"  imported in {import_s:.0f} s; repack -adb --cruft + commit-graph, as repos/maintenance.py runs them"
    )
    t0 = time.monotonic()
    git.run("--git-dir", str(repo_dir), "repack", "-a", "-d", "-b", "--cruft", "--quiet")
    git.run("--git-dir", str(repo_dir), "commit-graph", "write", "--reachable", "--changed-paths")
    return {"env": env, "origin_port": origin_port, "bundle_port": bundle_port, "var_dir": var_dir,
            "token": token, "repo_dir": repo_dir, "import_s": round(import_s, 1),
            "repack_s": round(time.monotonic() - t0, 1)}  # fmt: skip


def start_servers(hs: dict, procs: Processes) -> dict[str, int]:
    pids = {}
    for name, port in (("origin", hs["origin_port"]), ("bundle-server", hs["bundle_port"])):
        say(f"hostsite: start gunicorn ({name}) on 127.0.0.1:{port}")
        pids[name] = start_web(procs, hs["env"], port, name=name).pid
    return pids


BUILD_SCRIPT = r"""
import json, resource, time
from bundles import build as B
from bundles.models import Bundle, BundleState
from bundles.services import bundles_build
from repos import selectors

marks = []
_orig = B._progress
def _progress(run, text):
    marks.append((time.monotonic(), text))
    _orig(run, text)
B._progress = _progress
repo = selectors.repository_by_name("bench", "big")
t0 = time.monotonic()
result = bundles_build(repo=repo)
t1 = time.monotonic()
ru_self = resource.getrusage(resource.RUSAGE_SELF)
ru_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
rows = Bundle.objects.filter(repository=repo, state=BundleState.PUBLISHED).order_by("creation_token", "flavor")
print("BENCH-JSON " + json.dumps({
    "status": result.status, "detail": result.detail,
    "kind": result.outcome.kind if result.outcome else "",
    "wall_s": t1 - t0,
    "cpu_s": ru_self.ru_utime + ru_self.ru_stime + ru_kids.ru_utime + ru_kids.ru_stime,
    "marks": [(t - t0, text) for t, text in marks],
    "bundles": [{"flavor": b.flavor, "kind": b.kind, "size": b.size, "key": b.storage_key,
                 "token": b.creation_token, "commits": b.commit_count} for b in rows],
}))
"""


def build_bundles(hs: dict) -> dict:
    say("building bundles: bundles.services.bundles_build in a child process (both flavors)")
    t0 = time.monotonic()
    out = manage(hs["env"], "shell", "-c", BUILD_SCRIPT)
    wall = time.monotonic() - t0
    line = next((x for x in reversed(out.splitlines()) if x.startswith("BENCH-JSON ")), None)
    if line is None:
        raise SetupError(f"the bundle build printed no result:\n{out[-3000:]}")
    result = json.loads(line.removeprefix("BENCH-JSON "))
    result["process_wall_s"] = wall
    if result["status"] != "built":
        raise SetupError(f"bundle build: {result['status']} {result['detail']}")
    # Each step lasts until the next progress message; the last one ("published") ends the run.
    marks = result["marks"]
    steps = []
    for i, (t, text) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else result["wall_s"]
        steps.append({"step": text, "s": end - t})
    result["steps"] = steps
    flavors: dict[str, float] = {}
    current = None
    for step in steps:
        text = step["step"]
        if text.startswith("writing the "):
            current = text.split()[2]
        elif text.startswith("published"):
            current = None
        if current:
            flavors[current] = flavors.get(current, 0.0) + step["s"]
    result["flavor_s"] = flavors
    sizes = {b["flavor"]: b["size"] for b in result["bundles"]}
    say("  built in {:.0f} s: ".format(result["wall_s"]) + ", ".join(
        f"{f} {sizes.get(f, 0) / MIB:.1f} MiB in {flavors.get(f, 0):.0f} s" for f in ("standard", "zstd")))  # fmt: skip
    return result


def pack_check(git: Git, repo_dir: Path, tmp: Path) -> dict:
    """Not a target: the base bundle's two packs written as bundles/packing.py writes them
    (`pack-objects --stdout --revs`, --no-reuse-delta / pack.compression=0 --no-reuse-object),
    with and without `pack.allowPackReuse=false`, and the uncompressed one through zstd with
    the build's parameters. With a bitmap (repos/maintenance.py writes one) pack-objects may
    send the existing pack verbatim, whatever --no-reuse-* say; this shows whether it did."""
    import zstandard  # the app's dependency, in its virtualenv

    tips = git.run("--git-dir", str(repo_dir), "for-each-ref", "--format=%(objectname)",
                   "refs/heads/", "refs/tags/")  # fmt: skip
    stdin = "".join(f"{oid}\n" for oid in sorted(set(tips.split()))).encode()
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=27, enable_ldm=True, threads=-1)
    out: dict = {}
    for label, extra in (
        ("as built", []),
        ("pack.allowPackReuse=false", ["-c", "pack.allowPackReuse=false"]),
    ):
        row = {}
        for flavor, cfg, reuse in (("standard", [], "--no-reuse-delta"),
                                   ("zstd", ["-c", "pack.compression=0"], "--no-reuse-object")):  # fmt: skip
            dest = tmp / f"pack-check-{flavor}.pack"
            t0 = time.monotonic()
            with open(dest, "wb") as fh:
                subprocess.run([GIT, "--git-dir", str(repo_dir), *extra, *cfg, "pack-objects", "--stdout", "--revs",
                                "--delta-base-offset", "--quiet", reuse], input=stdin, stdout=fh, env=git.env,
                               check=True, timeout=7200)  # fmt: skip
            row[f"{flavor}_pack_bytes"] = dest.stat().st_size
            row[f"{flavor}_pack_s"] = time.monotonic() - t0
            if flavor == "zstd":
                t0 = time.monotonic()
                compressor = zstandard.ZstdCompressor(compression_params=params)
                with open(dest, "rb") as ifh, open(tmp / "pack-check.zst", "wb") as ofh:
                    compressor.copy_stream(ifh, ofh, size=dest.stat().st_size)
                row["zstd_bytes"] = (tmp / "pack-check.zst").stat().st_size
                row["zstd_s"] = time.monotonic() - t0
                (tmp / "pack-check.zst").unlink()
            dest.unlink()
        row["zstd_vs_standard"] = row["zstd_bytes"] / row["standard_pack_bytes"]
        out[label] = row
        say(f"  pack check, {label}: standard {row['standard_pack_bytes'] / MIB:.1f} MiB in "
            f"{row['standard_pack_s']:.1f} s; uncompressed {row['zstd_pack_bytes'] / MIB:.1f} MiB in "
            f"{row['zstd_pack_s']:.1f} s -> zstd {row['zstd_bytes'] / MIB:.1f} MiB "
            f"({row['zstd_vs_standard']:.3f}x)")  # fmt: skip
    return out


# --- clones ------------------------------------------------------------------------------------


def push_day(ctx: dict, master: Path, gen: HistoryGenerator | None, args) -> dict:
    """--day-commits new commits on the default branch, pushed through the origin (not the
    proxy), without rebuilding the bundles: they are then one day behind."""
    git, tmp = ctx["git"], ctx["tmp"]
    work = tmp / "day-work.git"
    git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
    branch = default_branch(git, master)
    parent = git.run("--git-dir", str(work), "rev-parse", branch).strip()
    if gen is None:  # --repo: new files under bench-day/, edited from then on
        gen = HistoryGenerator(args.seed + 1, prefix="bench-day/", initial_files=20)
        gen.ts = int(git.run("--git-dir", str(work), "log", "-1", "--format=%ct", parent).strip())
    # A day: --day-commits commits spread over 24 hours.
    gap = max(1, 86_400 // max(1, args.day_commits))

    def writer(out):
        buffered = Buffered(out)
        gen.stream(buffered, args.day_commits, ref=branch, parent=parent, tags=False,
                   seconds_between=(gap // 2, gap * 3 // 2))  # fmt: skip
        buffered.flush()

    fast_import(work, git, writer)
    # fast-import deltas a blob only against the blob written before it, and a push would reuse
    # those deltas: make the day's objects loose, as a developer's commits are, so the push's
    # pack-objects does its own delta search (against the origin's objects too: a thin pack).
    for pack in sorted((work / "objects" / "pack").glob("pack-*.pack")):
        data = pack.read_bytes()
        for sibling in pack.parent.glob(f"{pack.stem}.*"):
            sibling.unlink()
        git.run("--git-dir", str(work), "unpack-objects", "-q", input=data)
    tip = git.run("--git-dir", str(work), "rev-parse", branch).strip()
    url = f"http://bench:{ctx['token']}@127.0.0.1:{ctx['origin_port']}/bench/big.git"
    t0 = time.monotonic()
    git.run("--git-dir", str(work), "push", "--quiet", url, f"{tip}:{branch}", timeout=3600)
    push_s = time.monotonic() - t0
    say(f"pushed {args.day_commits} commits to {branch} in {push_s:.1f} s (bundles not rebuilt)")
    return {"branch": branch, "commits": args.day_commits, "push_s": round(push_s, 2), "tip": tip}


def origin_refs(git: Git, repo_dir: Path) -> dict[str, str]:
    out = git.run("--git-dir", str(repo_dir), "for-each-ref", "--format=%(objectname) %(refname)",
                  "refs/heads/", "refs/tags/")  # fmt: skip
    return {ref: oid for oid, ref in (line.split(" ", 1) for line in out.splitlines())}


# --- report ------------------------------------------------------------------------------------
