"""Benchmark clone bundles: what a fresh clone costs the origin with and without bundles.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python bench/bundles.py                    # generated 50,000-commit repository, 3 rounds
    .venv/bin/python bench/bundles.py --rounds 5 --json /tmp/bundles.json
    .venv/bin/python bench/bundles.py --repo /path/to/repo.git   # mirror an existing repository

What it does, all on loopback and under one temporary directory (hostsite is started as
bench/smart_http.py starts it, whose helpers this script imports):

1. Generates a deterministic repository with `git fast-import` (--commits, default 50,000: text
   files edited a few lines per commit, so deltas matter, annotated tags every 500 commits), or
   mirrors --repo. hostsite imports it as the public bench/big, and the repository is then
   repacked as repos/maintenance.py leaves it (`repack -adb --cruft`, commit-graph).
2. Starts two gunicorns on the same VAR_DIR, as `make run` starts it: the origin, and a second
   one that only serves `/bundles/<key>` (the file backend's objects; in production a bucket
   or CDN), so the origin's CPU is the git server's alone. In front of both sits a small
   counting proxy on loopback: it routes `/bundles/*` to the second gunicorn and everything else
   to the origin, forwards one request per connection, and counts each request's bytes. Clones
   go through it, and so do the bundle URIs (the list makes them absolute from the Host header).
3. Builds the bundles with bundles.services.bundles_build in a child process with the server's
   environment (as the Celery task would), recording each step's time from the build's
   progress messages: each flavor's write, zstd compression, verification and storing.
4. Clones (`git clone --bare`, protocol v2) in three ways, interleaved, --rounds times each:
   without bundles; `--bundle-uri=<url>/bundle-list` (git 2.39 sends Accept-Encoding with zstd,
   so it gets the zstd flavor); and the standard flavor: the list fetched without zstd in
   Accept-Encoding, saved to a file and given as `--bundle-uri=<file>` (its URIs are absolute,
   so git downloads the standard objects through the proxy). Then it pushes --day-commits new
   commits to the default branch through the origin without rebuilding ("one day behind") and
   clones the same three ways again: the origin then serves only the day's delta.
   For every clone: bytes the origin sent, origin CPU seconds (user+sys of the origin's
   gunicorn processes and the git processes they ran, from /proc), bytes the bundle server
   sent, bytes on the wire (everything through the proxy) and the client's wall time.

Targets (from the issue): with fresh bundles, origin bytes <= 1% and origin CPU <= 5% of a
clone without bundles; zstd-flavor wire bytes <= 0.6x the standard flavor's. /proc counts CPU
in 10 ms ticks, and a fresh-bundle clone costs the origin about 15 ms: the CPU target's
numerator comes from --cpu-block clones in a row, read once around the block.

The machine may be shared and noisy: compare the ratios of one run, not absolute numbers
across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smart_http import (  # bench/ is not a package
    BASE_DIR,
    GIT,
    PY,
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
    pack_bytes,
    run_benchmark,
    say,
    verdict,
    wait_for_http,
)

from workspaces import _repo_dir as repo_dir_from_output

MIB = 1024 * 1024
MIN_COMMITS = 50_000  # the issue's repository size
ORIGIN_BYTES_TARGET = 0.01
ORIGIN_CPU_TARGET = 0.05
ZSTD_WIRE_TARGET = 0.6

SCENARIOS = ("none", "zstd", "standard")
SCENARIO_LABELS = {
    "none": "no bundles",
    "zstd": "bundles, zstd flavor",
    "standard": "bundles, standard flavor",
}
PHASES = ("fresh", "behind")
PHASE_LABELS = {"fresh": "fresh bundles", "behind": "bundles one day behind"}


# --- the repository ----------------------------------------------------------------------------


class HistoryGenerator:
    """A deterministic history of text files, written as a `git fast-import` stream.

    Files are lines of words from a fixed vocabulary; every commit edits a few lines of one to
    four files (occasionally adding a file), so most blobs are small deltas of their previous
    version, as in a source repository. State is kept between calls, so a later stream (the
    "day behind" commits) continues the same files."""

    def __init__(self, seed: int, *, prefix: str = "", initial_files: int = 360):
        self.rng = random.Random(seed)  # noqa: S311 - deterministic data, not security
        rng = self.rng
        letters = "abcdefghijklmnopqrstuvwxyz_"
        vocab = ["".join(rng.choices(letters, k=rng.randint(2, 11))) for _ in range(6000)]
        vocab += ["def", "return", "if", "else", "for", "in", "self", "None", "import", "class", "=", "==",
                  "(", ")", ":", "{", "}", "[", "]", "+", "-", "0", "1", "True", "False"]  # fmt: skip
        # Zipf-like word frequencies, as identifiers have.
        cum = list(itertools.accumulate(1.0 / (i + 1) ** 0.9 for i in range(len(vocab))))

        def line() -> str:
            indent = "    " * rng.choice((0, 1, 1, 2, 2, 2, 3))
            return indent + " ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(2, 12))) + "\n"

        self.pool = [line() for _ in range(150_000)]
        self.authors = [
            f"{rng.choice(vocab).title()} {rng.choice(vocab).title()} <dev{i}@example.invalid>"
            for i in range(60)
        ]
        self.prefix = prefix
        self.files: dict[str, list[str]] = {}
        self.pending_initial = True
        for i in range(initial_files):
            self.files[self._name(i)] = [self._line() for _ in range(rng.randint(20, 140))]
        self.count = 0  # commits written so far
        self.ts = 1_500_000_000

    def _name(self, i: int) -> str:
        return f"{self.prefix}src/pkg{i % 24:02d}/module{i:04d}.py"

    def _line(self) -> str:
        return self.pool[self.rng.randrange(len(self.pool))]

    def _edit(self, lines: list[str]) -> None:
        rng = self.rng
        for _ in range(rng.choice((1, 1, 2, 2, 3, 4, 6))):
            pos = rng.randrange(len(lines))
            op = rng.random()
            if op < 0.45:
                lines[pos] = self._line()
            elif op < 0.8 or len(lines) < 20:
                lines.insert(pos, self._line())
            else:
                del lines[pos]

    def stream(self, out, commits: int, *, ref: str, parent: str | None = None, tags: bool = True,
               seconds_between: tuple[int, int] = (300, 7200)) -> None:  # fmt: skip
        rng = self.rng
        names = sorted(self.files)
        for k in range(commits):
            n = self.count
            if self.pending_initial:
                changed = names
                self.pending_initial = False
            else:
                changed = rng.sample(names, rng.choice((1, 1, 1, 2, 2, 3, 4)))
                for name in changed:
                    self._edit(self.files[name])
                if n % 150 == 0:
                    name = self._name(len(self.files))
                    self.files[name] = [self._line() for _ in range(rng.randint(20, 120))]
                    names.append(name)
                    names.sort()
                    changed = [*changed, name]
            self.ts += rng.randint(*seconds_between)
            author = rng.choice(self.authors)
            subject = self._line().strip()[:68] or "update"
            body = "".join(self._line().strip() + "\n" for _ in range(rng.choice((0, 0, 1, 2, 3))))
            message = (f"{subject}\n\n{body}" if body else f"{subject}\n").encode()
            head = f"commit {ref}\nmark :{k + 1}\n"
            head += f"author {author} {self.ts} +0000\ncommitter {author} {self.ts} +0000\n"
            head += f"data {len(message)}\n"
            out.write(head.encode() + message)
            if k == 0 and parent:
                out.write(f"from {parent}\n".encode())
            for name in changed:
                data = "".join(self.files[name]).encode()
                out.write(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
            out.write(b"\n")
            self.count += 1
            if tags and self.count % 500 == 0:
                tag = f"v{self.count // 5000}.{self.count // 500 % 10}.0"
                msg = f"Release {tag}\n".encode()
                out.write(f"tag {tag}\nfrom :{k + 1}\ntagger {author} {self.ts} +0000\n"
                          f"data {len(msg)}\n".encode() + msg + b"\n")  # fmt: skip


def fast_import(repo: Path, git: Git, writer) -> None:
    proc = subprocess.Popen(
        [GIT, "-C", str(repo), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git.env,
    )
    err_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        writer(proc.stdin)
        proc.stdin.write(b"done\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    code = proc.wait()
    reader.join()
    if code != 0:
        err = b"".join(err_chunks).decode(errors="replace")
        raise SetupError(f"git fast-import failed: {err.strip()[-2000:]}")


def generate(master: Path, git: Git, gen: HistoryGenerator, commits: int) -> None:
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(master))

    def writer(out):
        buffered = _Buffered(out)
        gen.stream(buffered, commits, ref="refs/heads/main")
        buffered.flush()

    fast_import(master, git, writer)


class _Buffered:
    """Fewer, larger writes to the fast-import pipe."""

    def __init__(self, out, limit: int = 1 << 20):
        self.out, self.limit, self.parts, self.size = out, limit, [], 0

    def write(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= self.limit:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.out.write(b"".join(self.parts))
            self.parts, self.size = [], 0


def default_branch(git: Git, repo: Path) -> str:
    try:
        return git.run("--git-dir", str(repo), "symbolic-ref", "HEAD").strip()
    except MeasureError:
        return "refs/heads/main"


# --- a counting proxy --------------------------------------------------------------------------


class CountingProxy:
    """An HTTP/1.1 proxy on loopback that forwards one request per connection (it sets
    `Connection: close`), routes `/bundles/*` to the bundle server and the rest to the origin,
    and records each request's method, path, status and bytes in both directions."""

    def __init__(self, origin_port: int, bundle_port: int, origin_cpu=None):
        self.origin_port = origin_port
        self.bundle_port = bundle_port
        # Called before and after each origin request: git's requests come one at a time, so
        # the difference is that request's CPU on the origin (its git processes are reaped
        # before gunicorn closes the connection).
        self.origin_cpu = origin_cpu
        self.lock = threading.Lock()
        self.records: list[dict] = []
        self.errors: list[str] = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, name="proxy", daemon=True)
        self.thread.start()

    def take(self) -> list[dict]:
        with self.lock:
            records, self.records = self.records, []
        return records

    def stop(self) -> None:
        self.stopping = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def _accept(self) -> None:
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream = None
        try:
            client.settimeout(900)
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = client.recv(65536)
                if not chunk or len(buf) > 1 << 20:
                    return
                buf += chunk
            head, rest = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            method, target = lines[0].split(b" ")[:2]
            path = target.decode("latin-1")
            headers = [h for h in lines[1:] if not h.lower().startswith((b"connection:", b"keep-alive:"))]
            accept = next((h.split(b":", 1)[1].strip().decode("latin-1") for h in headers
                           if h.lower().startswith(b"accept-encoding:")), "")  # fmt: skip
            backend = "bundles" if path.startswith("/bundles/") else "origin"
            port = self.bundle_port if backend == "bundles" else self.origin_port
            cpu0 = self.origin_cpu() if self.origin_cpu and backend == "origin" else None
            upstream = socket.create_connection(("127.0.0.1", port), timeout=900)
            upstream.sendall(b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n" + rest)
            sent_up = [len(buf)]

            def client_to_upstream() -> None:
                with contextlib.suppress(OSError):
                    while data := client.recv(1 << 16):
                        upstream.sendall(data)
                        sent_up[0] += len(data)
                with contextlib.suppress(OSError):
                    upstream.shutdown(socket.SHUT_WR)

            pump = threading.Thread(target=client_to_upstream, daemon=True)
            pump.start()
            down, resp_head = 0, b""
            while data := upstream.recv(1 << 18):
                if len(resp_head) < 65536 and b"\r\n\r\n" not in resp_head:
                    resp_head += data[:65536]
                client.sendall(data)
                down += len(data)
            cpu = self.origin_cpu() - cpu0 if cpu0 is not None else None
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
            pump.join(5)
            status_line, _, rest_head = resp_head.partition(b"\r\n")
            parts = status_line.split(b" ")
            encoding = next((h.split(b":", 1)[1].strip().decode("latin-1")
                             for h in rest_head.split(b"\r\n\r\n")[0].split(b"\r\n")
                             if h.lower().startswith(b"content-encoding:")), "")  # fmt: skip
            record = {
                "method": method.decode("latin-1"),
                "path": path,
                "backend": backend,
                "status": int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None,
                "down": down,
                "up": sent_up[0],
                "accept_encoding": accept,
                "content_encoding": encoding,
                "origin_cpu_s": cpu,
            }
            with self.lock:
                self.records.append(record)
        except OSError as exc:
            with self.lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            for s in (client, upstream):
                if s is not None:
                    with contextlib.suppress(OSError):
                        s.close()


# --- CPU of a process tree ---------------------------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root_pid: int) -> float:
    """CPU seconds (user+sys) of root_pid and its descendants, including the children they
    have reaped (cutime/cstime): a worker's finished git processes count once reaped."""
    children: dict[int, list[int]] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        times[pid] = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total / _TICK


# --- setup -------------------------------------------------------------------------------------


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
    manage(env, "user", "create", "bench")
    token = manage(env, "token", "create", "bench", "--scope", "write").strip()
    if not token:
        raise SetupError("manage.py token create printed no token")
    git.secrets.append(token)
    t0 = time.monotonic()
    repo_dir = repo_dir_from_output(manage(env, "repo", "create", "bench/big", "--import", str(master)))
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
    argv = [PY, "-m", "gunicorn", "-c", str(BASE_DIR / "hostsite" / "gunicorn_conf.py"),
            "hostsite.wsgi:application"]  # fmt: skip
    for name, port in (("origin", hs["origin_port"]), ("bundle-server", hs["bundle_port"])):
        say(f"hostsite: start gunicorn ({name}) on 127.0.0.1:{port}")
        env = dict(hs["env"], PORT=str(port))
        proc = procs.start(name, argv, env=env, cwd=BASE_DIR)
        try:
            wait_for_http(f"http://127.0.0.1:{port}/", proc, f"hostsite ({name})")
        except SetupError as exc:
            raise SetupError(f"{exc}\n{procs.log_tail(name)}") from None
        pids[name] = proc.pid
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


def fetch_standard_list(proxy_url: str, dest: Path) -> None:
    """The list as a client without zstd gets it: no zstd in Accept-Encoding."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    request = urllib.request.Request(  # noqa: S310 - a loopback http URL we built
        f"{proxy_url}/bundle-list", headers={"Accept-Encoding": "identity"}
    )
    with opener.open(request, timeout=60) as response:
        dest.write_bytes(response.read())


def summarize_records(records: list[dict]) -> dict:
    origin = [r for r in records if r["backend"] == "origin"]
    bundles = [r for r in records if r["backend"] == "bundles"]
    pack = [r for r in origin if r["method"] == "POST" and r["path"].endswith("/git-upload-pack")]
    return {
        "origin_bytes": sum(r["down"] for r in origin),
        "origin_upload_pack_bytes": sum(r["down"] for r in pack),
        "origin_requests": len(origin),
        "bundle_bytes": sum(r["down"] for r in bundles),
        "bundle_requests": len(bundles),
        "wire_down_bytes": sum(r["down"] for r in records),
        "wire_up_bytes": sum(r["up"] for r in records),
        "bad_status": [
            f"{r['method']} {r['path']} -> {r['status']}"
            for r in records
            if r["status"] is None or r["status"] >= 400
        ],
    }


def clone_once(ctx: dict, phase: str, scenario: str, dest: Path, expected: dict[str, str]) -> dict:
    git, proxy = ctx["git"], ctx["proxy"]
    url = ctx["proxy_url"]
    proxy.take()
    time.sleep(0.2)
    cpu0 = {name: tree_cpu(pid) for name, pid in ctx["pids"].items()}
    t0 = time.perf_counter()
    args = ["-c", "protocol.version=2", "clone", "--bare", "--quiet"]
    if scenario == "zstd":
        args.append(f"--bundle-uri={url}/bundle-list")
    elif scenario == "standard":
        listing = dest.parent / f"{dest.name}.bundle-list"
        fetch_standard_list(url, listing)
        args.append(f"--bundle-uri={listing}")
    try:
        git.run(*args, url, str(dest), timeout=3600)
        wall = time.perf_counter() - t0
        # Workers reap their git processes as a response ends; let them, then read the CPU.
        time.sleep(0.5)
        cpu1 = {name: tree_cpu(pid) for name, pid in ctx["pids"].items()}
        records = proxy.take()
        got = {
            ref: oid for oid, ref in (
                line.split(" ", 1) for line in git.run(
                    "--git-dir", str(dest), "for-each-ref", "--format=%(objectname) %(refname)",
                    "refs/heads/", "refs/tags/").splitlines())
        }  # fmt: skip
        result = summarize_records(records) | {
            "wall_s": wall,
            "origin_cpu_s": cpu1["origin"] - cpu0["origin"],
            "bundle_server_cpu_s": cpu1["bundle-server"] - cpu0["bundle-server"],
            "client_pack_bytes": pack_bytes(dest),
            "refs_ok": got == expected,
            "records": records,
        }
        if scenario != "none" and not result["bundle_requests"]:
            result["note"] = "no bundle was downloaded"
        return result
    finally:
        shutil.rmtree(dest, ignore_errors=True)
        if scenario == "standard":
            (dest.parent / f"{dest.name}.bundle-list").unlink(missing_ok=True)


def run_phase(ctx: dict, phase: str, rounds: int, results: dict, errors: list[str]) -> None:
    expected = ctx["expected"]
    for rnd in range(rounds):
        # Rotate the order so that no scenario always runs first (cold caches) or last.
        order = SCENARIOS[rnd % 3 :] + SCENARIOS[: rnd % 3]
        parts = []
        for scenario in order:
            dest = ctx["tmp"] / f"clone-{phase}-{scenario}-{rnd}.git"
            try:
                r = clone_once(ctx, phase, scenario, dest, expected)
            except (MeasureError, OSError, subprocess.TimeoutExpired) as exc:
                errors.append(f"{phase} round {rnd + 1} {scenario}: {exc}")
                r = None
            results[phase][scenario].append(r)
            if r:
                if not r["refs_ok"]:
                    errors.append(
                        f"{phase} round {rnd + 1} {scenario}: the clone's refs differ from the origin's"
                    )
                if r["bad_status"]:
                    errors.append(f"{phase} round {rnd + 1} {scenario}: HTTP errors {r['bad_status'][:5]}")
                if r.get("note"):
                    errors.append(f"{phase} round {rnd + 1} {scenario}: {r['note']}")
                parts.append(f"{scenario} {r['wall_s']:.1f}s origin {r['origin_bytes'] / MIB:.2f} MiB "
                             f"{r['origin_cpu_s']:.2f} cpu-s")  # fmt: skip
            else:
                parts.append(f"{scenario} failed")
        say(f"{phase} round {rnd + 1}/{rounds}: " + "; ".join(parts))


def cpu_block(ctx: dict, clones: int) -> float:
    """The origin's CPU per fresh-bundle clone (zstd), read once around `clones` clones in a
    row: /proc counts in 10 ms ticks, so one clone's reading is +-10 ms of a ~15 ms figure,
    while a block's total errs by one tick for all of them."""
    git, url = ctx["git"], ctx["proxy_url"]
    time.sleep(0.5)
    cpu0 = tree_cpu(ctx["pids"]["origin"])
    for i in range(clones):
        dest = ctx["tmp"] / f"clone-block-{i}.git"
        try:
            git.run(
                "-c",
                "protocol.version=2",
                "clone",
                "--bare",
                "--quiet",
                f"--bundle-uri={url}/bundle-list",
                url,
                str(dest),
                timeout=3600,
            )
        finally:
            shutil.rmtree(dest, ignore_errors=True)
    time.sleep(0.5)
    ctx["proxy"].take()
    return (tree_cpu(ctx["pids"]["origin"]) - cpu0) / clones


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
        buffered = _Buffered(out)
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

METRICS = ("wall_s", "origin_bytes", "origin_upload_pack_bytes", "origin_requests", "origin_cpu_s",
           "bundle_bytes", "bundle_requests", "bundle_server_cpu_s", "wire_down_bytes", "wire_up_bytes",
           "client_pack_bytes")  # fmt: skip


def medians(samples: list[dict | None]) -> dict:
    ok = [s for s in samples if s]
    out = {m: med([s[m] for s in ok]) for m in METRICS}
    # /proc counts CPU in 10 ms ticks, so one clone's origin CPU is +-10 ms and a median of such
    # values moves in 10 ms steps (a third of a bundle clone's whole cost). The mean over the
    # rounds errs by a few ms instead: the CPU ratios use it.
    cpu = [s["origin_cpu_s"] for s in ok if s.get("origin_cpu_s") is not None]
    out["origin_cpu_mean_s"] = sum(cpu) / len(cpu) if cpu else None
    out["n"] = len(ok)
    out["spread"] = {m: (min(s[m] for s in ok), max(s[m] for s in ok)) if ok else None
                     for m in ("wall_s", "origin_cpu_s", "origin_bytes")}  # fmt: skip
    return out


def ratio(a, b) -> float | None:
    return None if a is None or not b else a / b


def build_report(results: dict, build: dict, meta: dict, errors: list[str]) -> dict:
    summary = {phase: {sc: medians(results[phase][sc]) for sc in SCENARIOS} for phase in PHASES}
    fresh = summary["fresh"]
    ob = ratio(fresh["zstd"]["origin_bytes"], fresh["none"]["origin_bytes"])
    # The zstd clones' CPU from the block of clones in a row when there is one (precise to a
    # tick over the block), else the mean over the rounds.
    block = meta.get("cpu_block", {}).get("origin_cpu_per_clone_s")
    oc = ratio(
        block if block is not None else fresh["zstd"]["origin_cpu_mean_s"], fresh["none"]["origin_cpu_mean_s"]
    )
    zw = ratio(fresh["zstd"]["wire_down_bytes"], fresh["standard"]["wire_down_bytes"])
    targets = {
        "origin_bytes_fresh_vs_none": {"value": ob, "target": f"<= {ORIGIN_BYTES_TARGET}",
                                       "ok": None if ob is None else ob <= ORIGIN_BYTES_TARGET},
        "origin_cpu_fresh_vs_none": {"value": oc, "target": f"<= {ORIGIN_CPU_TARGET}",
                                     "ok": None if oc is None else oc <= ORIGIN_CPU_TARGET},
        "zstd_wire_vs_standard": {"value": zw, "target": f"<= {ZSTD_WIRE_TARGET}",
                                  "ok": None if zw is None else zw <= ZSTD_WIRE_TARGET},
    }  # fmt: skip
    # The same ratios for the standard flavor and for bundles one day behind (not targets).
    extra = {
        "origin_bytes_fresh_standard_vs_none": ratio(
            fresh["standard"]["origin_bytes"], fresh["none"]["origin_bytes"]
        ),
        "origin_cpu_fresh_standard_vs_none": ratio(
            fresh["standard"]["origin_cpu_mean_s"], fresh["none"]["origin_cpu_mean_s"]
        ),
    }
    behind = summary["behind"]
    for sc in ("zstd", "standard"):
        extra[f"origin_bytes_behind_{sc}_vs_none"] = ratio(
            behind[sc]["origin_bytes"], behind["none"]["origin_bytes"]
        )
        extra[f"origin_cpu_behind_{sc}_vs_none"] = ratio(
            behind[sc]["origin_cpu_mean_s"], behind["none"]["origin_cpu_mean_s"]
        )
    # Where the origin's bytes go in a fresh-bundle clone: its requests, from the last round.
    last = next((s for s in reversed(results["fresh"]["zstd"]) if s), None)
    breakdown = []
    if last:
        for r in last["records"]:
            path = r["path"].split(".git/", 1)[-1] if r["backend"] == "origin" else "/bundles/<key>"
            breakdown.append({"backend": r["backend"], "request": f"{r['method']} {path}", "down": r["down"],
                              "up": r["up"], "accept_encoding": r["accept_encoding"],
                              "content_encoding": r["content_encoding"],
                              "origin_cpu_s": r.get("origin_cpu_s")})  # fmt: skip
    raw = {phase: {sc: [{k: v for k, v in (s or {}).items() if k != "records"} for s in results[phase][sc]]
                   for sc in SCENARIOS} for phase in PHASES}  # fmt: skip
    return {"meta": meta, "build": build, "summary": summary, "targets": targets, "other_ratios": extra,
            "fresh_zstd_requests": breakdown, "samples": raw, "errors": errors}  # fmt: skip


def mib(n) -> str:
    return "n/a" if n is None else f"{n / MIB:.2f}"


def print_report(report: dict) -> None:
    meta, build, summary, targets = report["meta"], report["build"], report["summary"], report["targets"]
    out = [""]
    out.append(f"hostsite clone-bundle benchmark: {meta['rounds']} rounds, scenarios interleaved")
    out.append(f"  repository: {meta['repository']}; {meta['commits']:,} commits, {meta['refs']} refs; "
               f"origin pack {meta['origin_pack_mib']:.1f} MiB (repack -adb, commit-graph)")  # fmt: skip
    out.append(f"  git {meta['git_version']}; hostsite {meta['hostsite_revision']}; {meta['cpus']} CPUs; "
               f"load avg before {meta['loadavg_before']}")  # fmt: skip
    out.append("")
    out.append(f"bundles built by bundles_build ({build['kind']}), {build['wall_s']:.1f} s wall, "
               f"{build['cpu_s']:.1f} CPU-s (both flavors, incl. verification and storing):")  # fmt: skip
    sizes = {b["flavor"]: b["size"] for b in build["bundles"]}
    for flavor in ("standard", "zstd"):
        out.append(
            f"  {flavor:<9} {mib(sizes.get(flavor)):>9} MiB  {build['flavor_s'].get(flavor, 0):7.1f} s"
        )
    if sizes.get("standard"):
        out.append(f"  zstd / standard size: {sizes.get('zstd', 0) / sizes['standard']:.3f}")
    out.append("  steps: " + "; ".join(f"{s['step']} {s['s']:.1f} s" for s in build["steps"]))
    for label, row in build.get("pack_check", {}).items():
        out.append(f"  pack check (not a target), {label}: standard pack {mib(row['standard_pack_bytes'])} MiB "
                   f"({row['standard_pack_s']:.1f} s), uncompressed pack {mib(row['zstd_pack_bytes'])} MiB "
                   f"({row['zstd_pack_s']:.1f} s) -> zstd {mib(row['zstd_bytes'])} MiB, "
                   f"{row['zstd_vs_standard']:.3f}x the standard")  # fmt: skip
    out.append("")
    head = (f"  {'median of ' + str(meta['rounds']):<28}{'wall s':>8}{'origin MiB':>12}{'of which pack':>14}"
            f"{'origin CPU s':>13}{'(mean)':>8}{'bundle MiB':>11}{'bndl CPU s':>11}{'wire MiB':>10}"
            f"{'req o/b':>9}")  # fmt: skip
    for phase in PHASES:
        extra = f" ({meta['day']['commits']} commits pushed after the build)" if phase == "behind" else ""
        out.append(f"{PHASE_LABELS[phase]}{extra}:")
        out.append(head)
        for sc in SCENARIOS:
            m = summary[phase][sc]
            req = f"{fmt(m['origin_requests'], '.0f')}/{fmt(m['bundle_requests'], '.0f')}"
            out.append(f"  {SCENARIO_LABELS[sc]:<28}{fmt(m['wall_s'], '.1f'):>8}{mib(m['origin_bytes']):>12}"
                       f"{mib(m['origin_upload_pack_bytes']):>14}{fmt(m['origin_cpu_s'], '.2f'):>13}"
                       f"{fmt(m['origin_cpu_mean_s'], '.3f'):>8}"
                       f"{mib(m['bundle_bytes']):>11}{fmt(m['bundle_server_cpu_s'], '.2f'):>11}"
                       f"{mib(m['wire_down_bytes']):>10}{req:>9}")  # fmt: skip
        out.append("")
    out.append(f"origin idle: {meta['origin_idle_cpu_per_s']:.4f} CPU-s per second of wall time")
    if meta.get("cpu_block"):
        b = meta["cpu_block"]
        out.append(f"origin CPU per fresh-bundle (zstd) clone, {b['clones']} clones in a row: "
                   f"{1000 * b['origin_cpu_per_clone_s']:.1f} ms (the target's numerator; the denominator is the "
                   "mean of the no-bundle clones)")  # fmt: skip
    out.append("")
    out.append(
        "where the origin's bytes and CPU go in a fresh-bundle clone (zstd, last round; the origin's CPU"
    )
    out.append("read from /proc before and after each of its requests):")
    for r in report["fresh_zstd_requests"]:
        enc = (
            f"  Accept-Encoding: {r['accept_encoding']!r} -> {r['content_encoding'] or 'identity'}"
            if ("bundle-list" in r["request"] or r["backend"] == "bundles")
            else ""
        )
        cpu = f"{r['origin_cpu_s']:6.3f} cpu-s" if r.get("origin_cpu_s") is not None else " " * 12
        out.append(
            f"  {r['backend']:<8} {r['request']:<40} {r['down']:>12,} bytes down {r['up']:>9,} up {cpu}{enc}"
        )
    out.append("")
    labels = {
        "origin_bytes_fresh_vs_none": "origin bytes, fresh bundles (zstd) / no bundles",
        "origin_cpu_fresh_vs_none": "origin CPU, fresh bundles (zstd) / no bundles",
        "zstd_wire_vs_standard": "wire bytes, zstd flavor / standard flavor",
    }
    out.append("targets:")
    for key, t in targets.items():
        out.append(
            f"  {labels[key]:<52}{fmt(t['value'], '.4f'):>8}   target {t['target']:<8} {verdict(t['ok'])}"
        )
    out.append("other ratios (not targets): " + ", ".join(
        f"{k.removeprefix('origin_')} {fmt(v, '.4f')}" for k, v in report["other_ratios"].items()))  # fmt: skip
    if report["errors"]:
        out.append("")
        out.append(f"{len(report['errors'])} problems:")
        out.extend(f"  {e[:400]}" for e in report["errors"][:20])
    out.append("")
    out.append("targets: " + ", ".join(f"{k} {verdict(v['ok'])}" for k, v in targets.items())
               + f"   (whole run {meta['elapsed_s']:.0f} s)")  # fmt: skip
    print("\n".join(out), flush=True)


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawTextHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=3, help="clones of each kind per phase (default 3)")
    p.add_argument(
        "--repo", type=Path, help="benchmark this repository (mirrored) instead of a generated one"
    )
    p.add_argument("--commits", type=int, default=MIN_COMMITS,
                   help=f"commits in the generated repository (default {MIN_COMMITS})")  # fmt: skip
    p.add_argument("--day-commits", type=int, default=150,
                   help="commits pushed after the build: a day's worth (default 150)")  # fmt: skip
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated repository")
    p.add_argument("--no-pack-check", action="store_true",
                   help="skip writing the base packs again with pack.allowPackReuse=false")  # fmt: skip
    p.add_argument(
        "--cpu-block",
        type=int,
        default=10,
        help="fresh-bundle clones in a row for the origin CPU figure (default 10; 0: use the rounds)",
    )
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--tmpdir", type=Path, help="where the temporary directory goes (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, repositories)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.commits < 1 or args.day_commits < 1:
        p.error("--rounds, --commits and --day-commits must be at least 1")
    return args


def run(args: argparse.Namespace, tmp: Path, procs: Processes, stack: contextlib.ExitStack) -> dict:
    t_start = time.monotonic()
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {
        "rounds": args.rounds,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    master, gen = setup_repository(args, tmp, git, meta)
    hs = setup_hostsite(tmp, master, git)
    meta["hostsite"] = {k: str(v) for k, v in hs.items() if k in ("import_s", "repack_s", "repo_dir")}
    meta["origin_pack_mib"] = pack_bytes(hs["repo_dir"]) / MIB
    pids = start_servers(hs, procs)
    proxy = CountingProxy(hs["origin_port"], hs["bundle_port"], lambda: tree_cpu(pids["origin"]))
    stack.callback(proxy.stop)
    proxy_url = f"http://127.0.0.1:{proxy.port}/bench/big.git"
    say(
        f"counting proxy on 127.0.0.1:{proxy.port}: /bundles/* -> {hs['bundle_port']}, rest -> {hs['origin_port']}"
    )
    ctx = {"git": git, "proxy": proxy, "proxy_url": proxy_url, "pids": pids, "tmp": tmp, "token": hs["token"],
           "origin_port": hs["origin_port"]}  # fmt: skip
    try:
        git.run("ls-remote", proxy_url)  # warm-up, untimed
    except MeasureError as exc:
        raise SetupError(f"ls-remote through the proxy failed: {exc}\n{procs.log_tail('origin')}") from None

    # The origin's CPU while idle (heartbeats and the like), to put the small numbers in scale.
    time.sleep(1)
    idle0 = tree_cpu(pids["origin"])
    time.sleep(5)
    meta["origin_idle_cpu_per_s"] = (tree_cpu(pids["origin"]) - idle0) / 5
    build = build_bundles(hs)
    if not args.no_pack_check:
        say(
            "pack check: the base bundle's packs written as bundles/packing.py does, with and without pack reuse"
        )
        build["pack_check"] = pack_check(git, hs["repo_dir"], tmp)
    errors: list[str] = []
    results = {phase: {sc: [] for sc in SCENARIOS} for phase in PHASES}
    ctx["expected"] = origin_refs(git, hs["repo_dir"])
    run_phase(ctx, "fresh", args.rounds, results, errors)
    if args.cpu_block:
        say(f"origin CPU of {args.cpu_block} fresh-bundle (zstd) clones in a row, read once around the block")
        meta["cpu_block"] = {
            "clones": args.cpu_block,
            "origin_cpu_per_clone_s": cpu_block(ctx, args.cpu_block),
        }
    meta["day"] = push_day(ctx, master, gen, args)
    ctx["expected"] = origin_refs(git, hs["repo_dir"])
    if ctx["expected"].get(meta["day"]["branch"]) != meta["day"]["tip"]:
        raise SetupError("the pushed commits did not reach the origin's default branch")
    run_phase(ctx, "behind", args.rounds, results, errors)
    errors += [f"proxy: {e}" for e in proxy.errors]
    meta["elapsed_s"] = time.monotonic() - _T0
    meta["benchmark_s"] = time.monotonic() - t_start
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = build_report(results, build, meta, errors)
    print_report(report)
    return report


_T0 = time.monotonic()


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def run_fn(tmp, procs):
        with contextlib.ExitStack() as stack:
            return run(args, tmp, procs, stack)

    return run_benchmark("bench/bundles.py", "hostsite-bench-bundles-", args, run_fn)


if __name__ == "__main__":
    sys.exit(main())
