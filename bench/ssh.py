"""Benchmark hostsite's git over SSH against plain OpenSSH + git-shell on the same repository.

A benchmark, not a timed test: it prints a table with PASS/FAIL per target and exits 2 when a
target failed (1 when the setup failed). Run from the project root, as root (both sides run
sshd, and the baseline logs in a system account):

    .venv/bin/python -m bench.ssh                          # 20k commits + 48 MiB of assets, SQLite
    .venv/bin/python -m bench.ssh --clones 3 --pushes 7 --commits 2000 --assets-mb 8   # a quick look
    .venv/bin/python -m bench.ssh --database postgres      # DATABASE_URL, or postgres@127.0.0.1

What it does, on loopback and under one temporary directory:

1. Generates a history with the bench generator (bench/harness/history.py, fast-import):
   `--commits` source-like commits with a binary asset (seeded random bytes, `-delta`) every
   few hundred commits, repacked once (`repack -adfb`, bitmaps) with a commit-graph. The same
   pack files go to both sides.
2. (a) hostsite: its own VAR_DIR and REPO_ROOT, SQLite (or a fresh PostgreSQL database),
   `migrate`, a user `bench` owning `bench/big`, the client's ed25519 key registered,
   `ssh_prepare`, `ssh_gateway`, and the sshd it prepared (AuthorizedKeysCommand, forced command
   `hostsite-shell`, the gateway forking a child per session, git served through
   repos.pipeline, hooks and the push's record included). No web server: SSH does not need it.
   (b) plain OpenSSH + git-shell (bench/harness/plainssh.py): a second sshd, the `gitplain`
   account (login shell git-shell), the repository in its home, the same key in authorized_keys.
3. Clone throughput: `git clone --bare --no-local` of the whole repository, protocol v2 (the
   default) and then v0, alternating (a, b), (b, a), ...; pack MiB / wall second.
4. Small-push latency: one new commit on a new branch (deleted again, untimed), alternating.

Targets (from the issue): clone throughput (v2) >= 0.9x plain; push median <= plain + 100 ms.
The v0 clone row is shown against the same 0.9x. Compare the figures of one run, not across runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import ssh_profile
from bench.harness import (
    MIB,
    Git,
    MeasureError,
    Processes,
    SetupError,
    add_run_options,
    client_env,
    fmt,
    hostsite_revision,
    med,
    paired,
    plainssh,
    run_benchmark,
    say,
)
from bench.harness.repository import Pusher, pack_bytes, refs_of
from bench.ssh_setup import Ours, generate_master, setup_ours, teardown_ours

CLONE_RATIO_TARGET = 0.9
PUSH_DELTA_TARGET_MS = 100.0
SIDES = ("ours", "plain")


def ssh_command(key: Path, known_hosts: Path) -> str:
    # git splits GIT_SSH_COMMAND with a shell; the run's paths have no spaces (mkdtemp).
    return (
        f"ssh -i {key} -o IdentitiesOnly=yes -o UserKnownHostsFile={known_hosts} "
        "-o StrictHostKeyChecking=yes -o BatchMode=yes -F /dev/null"
    )


def clone_once(git: Git, url: str, dest: Path, version: int) -> tuple[float, int]:
    """(seconds, pack bytes received) of one full bare clone."""
    try:
        seconds = git.timed("-c", f"protocol.version={version}", "clone", "--bare", "--no-local", "--quiet",
                            url, str(dest))  # fmt: skip
        return seconds, pack_bytes(dest)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def order(i: int) -> tuple[str, ...]:
    """(a, b), then (b, a): neither side always runs right after the other's cache-warming."""
    return SIDES if i % 2 == 0 else SIDES[::-1]


def measure_clones(git: Git, urls: dict[str, str], tmp: Path, runs: int, version: int) -> dict:
    out: dict = {side: {"mib_s": [], "s": [], "bytes": [], "errors": []} for side in SIDES}
    for i in range(runs):
        for side in order(i):
            try:
                seconds, size = clone_once(git, urls[side], tmp / f"clone-{side}", version)
            except (MeasureError, subprocess.TimeoutExpired) as exc:
                out[side]["errors"].append(str(exc))
                continue
            out[side]["s"].append(seconds)
            out[side]["bytes"].append(size)
            out[side]["mib_s"].append(size / MIB / seconds)
        last = "  ".join(f"{s} {fmt(out[s]['mib_s'][-1] if out[s]['mib_s'] else None)} MiB/s" for s in SIDES)
        say(f"clone v{version} {i + 1}/{runs}: {last}")
    return out


def measure_session_start(ssh: str, urls: dict[str, str], runs: int) -> dict[str, float]:
    """Median ms of one connection that runs a command refused at once (a repository that does
    not exist): the key check, the session's start and its end, without git's work."""
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for i in range(runs):
        for side in order(i):
            rest = urls[side].removeprefix("ssh://")
            login, _, port = rest.split("/", 1)[0].rpartition(":")
            argv = [*ssh.split(), "-p", port, login, "git-upload-pack '/nobody/nothing.git'"]
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False)
            times[side].append(1000 * (time.perf_counter() - t0))
    return {side: statistics.median(values) for side, values in times.items()}


def measure_pushes(git: Git, urls: dict[str, str], work: Path, runs: int) -> dict:
    pusher = Pusher(git, work)
    out: dict = {side: {"ms": [], "errors": []} for side in SIDES}
    for i in range(runs):
        for side in order(i):
            try:
                out[side]["ms"].append(pusher.push(urls[side], f"bench-push-{side}-{i}"))
            except (MeasureError, subprocess.TimeoutExpired) as exc:
                out[side]["errors"].append(str(exc))
        if i % 5 == 4 or i == runs - 1:
            say(
                f"push {i + 1}/{runs}: " + "  ".join(f"{s} {fmt(med(out[s]['ms']), '.0f')} ms" for s in SIDES)
            )
    return out


def warm_up(git: Git, urls: dict[str, str], master: Path, work: Path, procs: Processes) -> None:
    """Untimed: both sides advertise the master's refs, and take one push."""
    local = {tuple(x.split(" ", 1)) for x in refs_of(git, master).splitlines()}
    pusher = Pusher(git, work)
    for side in SIDES:
        try:
            remote = {tuple(x.split("\t")) for x in git.run("ls-remote", urls[side]).splitlines() if x}
            if not local <= remote:
                raise SetupError(f"{side} does not advertise the master's refs")
            ms = pusher.push(urls[side], f"bench-warmup-{side}")
        except MeasureError as exc:
            logs = "\n".join(procs.log_tail(name, 2000) for name in ("ssh-gateway", "sshd", "plain-sshd"))
            raise SetupError(f"warm-up against {side} failed: {exc}\n{logs}") from None
        say(f"warm-up {side}: ls-remote ok, push {ms:.0f} ms")


def verdicts(clones: dict, pushes: dict) -> dict:
    rows: dict = {}
    for version, data in clones.items():
        ours, plain = med(data["ours"]["mib_s"]), med(data["plain"]["mib_s"])
        ratio = ours / plain if ours is not None and plain else None
        rows[f"clone_v{version}"] = {
            "ours": ours, "plain": plain, "value": ratio, "target": f">= {CLONE_RATIO_TARGET}x",
            "ok": None if ratio is None else ratio >= CLONE_RATIO_TARGET,
            "paired": paired(data["ours"]["mib_s"], data["plain"]["mib_s"], lambda a, b: a / b),
        }  # fmt: skip
    ours, plain = med(pushes["ours"]["ms"]), med(pushes["plain"]["ms"])
    delta = ours - plain if ours is not None and plain is not None else None
    rows["push"] = {
        "ours": ours, "plain": plain, "value": delta, "target": f"<= +{PUSH_DELTA_TARGET_MS:.0f} ms",
        "ok": None if delta is None else delta <= PUSH_DELTA_TARGET_MS,
        "paired": paired(pushes["ours"]["ms"], pushes["plain"]["ms"], lambda a, b: a - b),
    }  # fmt: skip
    return rows


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def print_table(rows: dict, clones: dict, pushes: dict, meta: dict) -> None:
    print()
    print(f"git over SSH: hostsite (ours) vs plain OpenSSH + git-shell (plain), {meta['database']}")
    print(f"repository: {meta['repository']}, pack {meta['pack_mib']:.1f} MiB, git {meta['git_version']}")
    print(
        f"load average before: {meta['loadavg_before']}, after: {meta['loadavg_after']} ({meta['cpus']} CPUs)"
    )
    print()
    print(
        f"{'measure':<30} {'ours':>9} {'plain':>9} {'ours/plain':>11} {'target':>14}  verdict  spread ours | plain"
    )
    for version, data in clones.items():
        r = rows[f"clone_v{version}"]
        spread = " | ".join(
            f"{fmt(min(data[s]['mib_s'], default=None))}-{fmt(max(data[s]['mib_s'], default=None))}"
            for s in SIDES
        )
        label = f"clone v{version} MiB/s (n={meta['clones']})"
        print(f"{label:<30} {fmt(r['ours']):>9} {fmt(r['plain']):>9} {fmt(r['value'], '.2f'):>10}x "
              f"{r['target']:>14}  {_verdict(r['ok']):<7}  {spread}")  # fmt: skip
    r = rows["push"]
    spread = " | ".join(
        f"{fmt(min(pushes[s]['ms'], default=None), '.0f')}-{fmt(max(pushes[s]['ms'], default=None), '.0f')}"
        for s in SIDES
    )
    label = f"small push ms (n={meta['pushes']})"
    print(f"{label:<30} {fmt(r['ours'], '.0f'):>9} {fmt(r['plain'], '.0f'):>9} {fmt(r['value'], '+.0f'):>8} ms "
          f"{r['target']:>14}  {_verdict(r['ok']):<7}  {spread}")  # fmt: skip
    for name, data in [*((f"clone v{v}", d) for v, d in clones.items()), ("push", pushes)]:
        for side in SIDES:
            for err in data[side]["errors"][:3]:
                print(f"    {name} {side} error: {err[:300]}")
    # The verdicts compare the two medians; the median of each run's pair (a and b measured
    # back to back) is less swayed by load that changes during the run.
    print(
        "paired (median of each run's ours/plain, ours-plain): "
        f"clone v2 {fmt(rows['clone_v2']['paired'], '.2f')}x, clone v0 {fmt(rows['clone_v0']['paired'], '.2f')}x, "
        f"push {fmt(rows['push']['paired'], '+.0f')} ms"
    )
    print()


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    git_env = client_env(tmp / "client-home")
    git = Git(git_env, [])
    meta: dict = {
        "clones": args.clones,
        "pushes": args.pushes,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    if os.geteuid() != 0:
        raise SetupError("run as root: both sides run sshd, and the baseline logs in a system account")
    master = generate_master(
        tmp, git, commits=args.commits, assets_mb=args.assets_mb, seed=args.seed, meta=meta
    )

    key = tmp / "client-key"
    subprocess.run(["ssh-keygen", "-q", "-N", "", "-t", "ed25519", "-C", "bench", "-f", str(key)],
                   check=True, stdin=subprocess.DEVNULL)  # fmt: skip
    client_pub = key.with_name("client-key.pub").read_text()
    ours: Ours | None = None
    plain: plainssh.PlainSsh | None = None
    try:
        say(f"ours: migrate, user, repository, key, ssh_prepare, gateway, sshd ({args.database})")
        profile_dir = tmp / "profile" if args.profile else None
        if profile_dir is not None:
            profile_dir.mkdir()
        ours = setup_ours(
            tmp, master, client_pub, procs, git, database=args.database, profile_dir=profile_dir
        )
        meta["database"] = ours.database
        say("plain: the gitplain account, the repository in its home, sshd")
        plain = plainssh.setup_plain(tmp, master, client_pub, procs)
        known_hosts = tmp / "known_hosts"
        lines = []
        for port, pub in ((ours.port, ours.host_key_pub), (plain.port, plain.host_key_pub)):
            kind, blob = pub.read_text().split()[:2]
            lines.append(f"[127.0.0.1]:{port} {kind} {blob}\n")
        known_hosts.write_text("".join(lines))
        git.env.update({"GIT_SSH_COMMAND": ssh_command(key, known_hosts), "GIT_SSH_VARIANT": "ssh"})
        urls = {"ours": ours.url, "plain": plain.url}
        meta["urls"] = urls

        work = tmp / "push-work.git"
        git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
        warm_up(git, urls, master, work, procs)
        clones = {}
        for version in (2, 0):
            say(f"clone throughput, protocol v{version}: {args.clones} runs each, alternating")
            clones[version] = measure_clones(git, urls, tmp, args.clones, version)
        say(f"small-push latency: {args.pushes} runs each, alternating")
        pushes = measure_pushes(git, urls, work, args.pushes)
        say(f"session start: {args.pushes} refused commands each, alternating")
        meta["session_start_ms"] = measure_session_start(git.env["GIT_SSH_COMMAND"], urls, args.pushes)
        meta["pushes_recorded"] = ours.pushes_recorded()
    finally:
        procs.stop_all()
        plainssh.cleanup(plain)
        teardown_ours(ours)
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = verdicts(clones, pushes)
    print_table(rows, clones, pushes, meta)
    start = meta.get("session_start_ms") or {}
    if start:
        print(f"session start (connect, key check, a command refused at once): ours {start['ours']:.0f} ms, "
              f"plain {start['plain']:.0f} ms ({start['ours'] - start['plain']:+.0f} ms)")  # fmt: skip
    print(f"pushes recorded in hostsite's database: {meta['pushes_recorded']} "
          "(warm-up, timed and untimed deletes)")  # fmt: skip
    if profile_dir is not None:
        print("where our sessions spend their time (the gateway's child, from the fork; --profile):")
        print("\n".join(ssh_profile.summary(profile_dir)))
        print(f"cProfile per session: {profile_dir}/<pid>.prof (--keep keeps them)")
    args.failed = any(r["ok"] is False for r in rows.values())
    return {"benchmark": "ssh", "meta": meta, "targets": rows, "clones": clones, "pushes": pushes}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--commits", type=int, default=20_000, help="commits in the generated history (20000)")
    p.add_argument("--assets-mb", type=int, default=48, help="MiB of binary assets in the history (48)")
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated history")
    p.add_argument("--clones", type=int, default=7, help="full clones per side and protocol (7)")
    p.add_argument("--pushes", type=int, default=21, help="small pushes per side (21)")
    p.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite",
                   help="hostsite's database: SQLite in the run's VAR_DIR (default), or a fresh\n"
                        "PostgreSQL database beside DATABASE_URL's (default postgres@127.0.0.1:5432)")  # fmt: skip
    p.add_argument("--profile", action="store_true",
                   help="serve our sessions through bench.ssh_profile (cProfile + phase times per\n"
                        "session, summarized at the end); the profiler slows them: not for figures")  # fmt: skip
    add_run_options(p)
    args = p.parse_args(argv)
    if args.clones < 1 or args.pushes < 1 or args.commits < 2 or args.assets_mb < 0:
        p.error("--clones and --pushes must be at least 1, --commits at least 2, --assets-mb at least 0")
    args.failed = False
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    status = run_benchmark("bench.ssh", "hostsite-ssh-", args, run)
    return status or (2 if args.failed else 0)


if __name__ == "__main__":
    sys.exit(main())
