"""Benchmark hostsite's git smart HTTP against nginx + git http-backend and `git daemon`.

A benchmark, not a test: it prints a table and PASS/MISS per target, and exits 0 unless the
setup failed. Run from the project root with the project's virtualenv:

    .venv/bin/python bench/smart_http.py                 # generated ~117 MiB repository, 5 rounds
    .venv/bin/python bench/smart_http.py --rounds 3 --json /tmp/bench.json
    .venv/bin/python bench/smart_http.py --repo /path/to/repo.git

What it does, all on loopback and under one temporary directory:

1. Builds (or mirrors with --repo) one bare repository, repacks it once with
   `git repack -adb` (bitmaps) and writes a commit-graph. The resulting pack files are then
   installed into each server's copy, so all three serve byte-identical packs.
2. Starts three servers on free 127.0.0.1 ports: hostsite (gunicorn, as `make run` starts it,
   with a private VAR_DIR and SQLite), nginx + fcgiwrap + git http-backend (Debian packages,
   installed with apt-get when missing and running as root), and `git daemon`.
3. Measures, interleaving the servers in every round (A, B, C, A, B, C, ...): full clone
   throughput (pack bytes received / wall time), no-op fetch latency, small-push latency
   (one new commit on a throwaway branch, deleted again untimed).
4. Times hostsite's installed pre-receive and post-receive hooks directly, next to the cost of
   `django.setup()` (what a Django-booting hook would pay).

Targets (from the issue): clone throughput >= 0.9x nginx + http-backend; push latency <= that
baseline + 150 ms; hook median <= 30 ms.

The machine may be shared and noisy: compare the side-by-side ratios of one run, not absolute
numbers across runs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
_VENV_PY = BASE_DIR / ".venv" / "bin" / "python"
PY = str(_VENV_PY) if _VENV_PY.exists() else sys.executable
GIT = shutil.which("git") or "git"
ZERO_OID = "0" * 40
MIB = 1024 * 1024

CLONE_RATIO_TARGET = 0.9
PUSH_DELTA_TARGET_MS = 150.0
HOOK_TARGET_MS = 30.0

# Environment variables that would point hostsite at shared infrastructure, or route loopback
# traffic through a proxy. None of them reaches a child process.
_STRIP_ENV = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "BUNDLE_STORAGE_URL",
    "S3_ENDPOINT_URL",
    "REPO_ROOT",
    "CELERY_QUEUE",
    "DEBUG",
    "DJANGO_SETTINGS_MODULE",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
)

_T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


class SetupError(Exception):
    """The benchmark cannot run (exit 1)."""


class MeasureError(Exception):
    """One measurement failed; it is recorded and the run goes on."""


# --- processes ---------------------------------------------------------------------------------


def _die_with_parent() -> None:
    # Linux: SIGTERM the child if this script dies, however it dies (as hostsite/run.py does).
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Processes:
    """Long-running children, each in its own process group, all stopped in stop_all()."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.children: list[tuple[str, subprocess.Popen, object]] = []

    def start(self, name: str, argv: list[str], *, env: dict[str, str], cwd: Path | None = None):
        log = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop_all()
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.children.append((name, proc, log))
        return proc

    def log_tail(self, name: str, limit: int = 4000) -> str:
        path = self.log_dir / f"{name}.log"
        try:
            return path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def stop_all(self) -> None:
        for _name, proc, _log in reversed(self.children):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _name, proc, _log in reversed(self.children):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        for _name, proc, log in reversed(self.children):
            # Whatever is left in the group (workers, forked daemons) goes too.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.close()
        self.children.clear()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"{what} exited with {proc.returncode} before listening on port {port}")
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SetupError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f}s")


def wait_for_http(url: str, proc: subprocess.Popen, what: str, timeout: float = 60.0) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SetupError(f"{what} exited with {proc.returncode} before {url} answered")
        try:
            with opener.open(url, timeout=2):  # loopback only
                return
        except urllib.error.HTTPError:
            return  # it answered
        except (urllib.error.URLError, OSError) as exc:
            last = exc
            time.sleep(0.2)
    raise SetupError(f"{what}: {url} did not answer within {timeout:.0f}s ({last})")


# --- git on the client side --------------------------------------------------------------------


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STRIP_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def client_env(home: Path) -> dict[str, str]:
    """Client-side git: a pinned HOME and config, no system config, no prompts, no proxies."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    if not gitconfig.exists():
        # No background maintenance after fetches, so only the transfer is measured.
        gitconfig.write_text(
            "[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n[fetch]\n\twriteCommitGraph = false\n"
            "[advice]\n\tdetachedHead = false\n"
        )
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "1700000000 +0000",
        "GIT_COMMITTER_DATE": "1700000000 +0000",
    }


class Git:
    def __init__(self, env: dict[str, str], secrets: list[str]):
        self.env = env
        self.secrets = secrets

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text

    def run(self, *args: str, input: bytes | None = None, timeout: float = 3600) -> str:
        argv = [GIT, *args]
        proc = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=self.env,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()[-1500:]
            raise MeasureError(self.redact(f"git {' '.join(args)} exited {proc.returncode}: {err}"))
        return proc.stdout.decode(errors="replace")

    def timed(self, *args: str, timeout: float = 3600) -> float:
        """Seconds git took, wall clock; MeasureError if it failed."""
        t0 = time.perf_counter()
        self.run(*args, timeout=timeout)
        return time.perf_counter() - t0


# --- the repository ----------------------------------------------------------------------------


def generate_repository(path: Path, git: Git, *, size_mb: int, commits: int, seed: int) -> None:
    """A deterministic bare repository: text files edited over `commits` commits, plus seeded
    random (incompressible) blobs adding up to about `size_mb` MiB, written with fast-import."""
    rng = random.Random(seed)  # noqa: S311 - deterministic data, not security
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(path))
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(3000)]

    def line() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 12))) + "\n"

    files: dict[str, list[str]] = {}
    for i in range(200):
        files[f"src/mod{i % 12:02d}/file{i:03d}.txt"] = [line() for _ in range(rng.randint(60, 180))]
    blob_count = max(1, commits // 3)
    blob_size = size_mb * MIB // blob_count

    proc = subprocess.Popen(
        [GIT, "-C", str(path), "fast-import", "--quiet", "--done"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git.env,
    )
    out = proc.stdin
    try:
        blobs = 0
        for n in range(commits):
            if n == 0:
                changed = list(files)
            else:
                changed = rng.sample(sorted(files), rng.randint(2, 6))
                for name in changed:
                    lines = files[name]
                    for _ in range(rng.randint(1, 8)):
                        op = rng.random()
                        pos = rng.randrange(len(lines))
                        if op < 0.5:
                            lines[pos] = line()
                        elif op < 0.8 or len(lines) < 20:
                            lines.insert(pos, line())
                        else:
                            del lines[pos]
                if n % 25 == 0:
                    name = f"src/mod{rng.randrange(12):02d}/new{n:04d}.txt"
                    files[name] = [line() for _ in range(rng.randint(20, 80))]
                    changed.append(name)
            ts = 1_600_000_000 + n * 3600
            message = f"Change {n}: edit {len(changed)} files\n".encode()
            out.write(
                f"commit refs/heads/main\nmark :{n + 1}\n"
                f"author Bench Generator <bench@example.invalid> {ts} +0000\n"
                f"committer Bench Generator <bench@example.invalid> {ts} +0000\n"
                f"data {len(message)}\n".encode()
                + message
            )
            for name in changed:
                data = "".join(files[name]).encode()
                out.write(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
            if n % 3 == 2 and blobs < blob_count:
                data = rng.randbytes(blob_size)
                out.write(f"M 100644 inline assets/blob{blobs:04d}.bin\ndata {len(data)}\n".encode())
                out.write(data + b"\n")
                blobs += 1
            out.write(b"\n")
            if n % 50 == 49:
                out.write(f"reset refs/tags/v0.{n // 50}\nfrom :{n + 1}\n\n".encode())
        out.write(b"done\n")
        out.close()
    except BrokenPipeError:
        pass
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise SetupError(f"git fast-import failed: {err.strip()[-2000:]}")


def pack_files(repo: Path) -> list[Path]:
    return sorted((repo / "objects" / "pack").glob("pack-*"))


def pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in (repo / "objects" / "pack").glob("*.pack"))


def refs_of(git: Git, repo: Path) -> str:
    return git.run("--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)")


def install_packs(master: Path, target: Path) -> None:
    """Replace target's objects with master's pack files and commit-graph (same refs, so the
    same objects): every server then serves byte-identical packs."""
    objects = target / "objects"
    for p in (objects / "pack").iterdir():
        p.unlink()
    for d in objects.iterdir():
        if len(d.name) == 2 and d.is_dir():
            shutil.rmtree(d)
    for name in ("commit-graph", "commit-graphs"):
        p = objects / "info" / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    for p in pack_files(master):
        shutil.copy2(p, objects / "pack" / p.name)
    graph = master / "objects" / "info" / "commit-graph"
    if graph.exists():
        shutil.copy2(graph, objects / "info" / "commit-graph")


# --- servers -----------------------------------------------------------------------------------


@dataclass
class Server:
    key: str
    label: str
    url: str
    fetch_dir: Path | None = None
    samples: dict[str, list] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def manage(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [PY, str(BASE_DIR / "manage.py"), *args],
        env=env,
        cwd=BASE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    if proc.returncode != 0:
        raise SetupError(
            f"manage.py {args[0]} {args[1] if len(args) > 1 else ''} failed:\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def hostsite_env(var_dir: Path, port: int) -> dict[str, str]:
    env = base_env()
    env.update(
        {
            "VAR_DIR": str(var_dir),
            "SECRET_KEY": "bench-only",
            "HOST": "127.0.0.1",
            "PORT": str(port),
            "ACCESS_LOG": "0",
            "WEB_CONCURRENCY": "2",
            "DJANGO_SETTINGS_MODULE": "hostsite.settings",
        }
    )
    return env


def setup_hostsite(tmp: Path, master: Path, procs: Processes, git: Git) -> tuple[Server, Path, dict]:
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, port)
    say("hostsite: migrate, user, token, repo create --import")
    manage(env, "migrate", "--noinput")
    manage(env, "user", "create", "bench")
    token = manage(env, "token", "create", "bench", "--scope", "write").strip()
    if not token:
        raise SetupError("manage.py token create printed no token")
    git.secrets.append(token)
    out = manage(env, "repo", "create", "bench/big", "--import", str(master))
    repo_dir = Path(out.strip().splitlines()[-1].rsplit(" at ", 1)[-1])
    if not (repo_dir / "HEAD").is_file():
        raise SetupError(f"cannot find hostsite's repository directory in {out!r}")
    install_packs(master, repo_dir)
    say("hostsite: start gunicorn")
    proc = procs.start(
        "hostsite",
        [
            PY,
            "-m",
            "gunicorn",
            "-c",
            str(BASE_DIR / "hostsite" / "gunicorn_conf.py"),
            "hostsite.wsgi:application",
        ],
        env=env,
        cwd=BASE_DIR,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/", proc, "hostsite")
    except SetupError as exc:
        raise SetupError(f"{exc}\n{procs.log_tail('hostsite')}") from None
    url = f"http://bench:{token}@127.0.0.1:{port}/bench/big.git"
    info = {
        "port": port,
        "repo_dir": str(repo_dir),
        "var_dir": str(var_dir),
        "hooks_dir": str(repo_dir.parent.parent / ".hooks"),
    }
    return Server("hostsite", "hostsite", url), repo_dir, info | {"env": env}


def ensure_debian_packages(install: bool) -> str | None:
    """None when nginx and fcgiwrap are there (installing them if allowed), else why not."""

    def present() -> bool:
        return bool(shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")) and bool(
            shutil.which("fcgiwrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
        )

    if present():
        return None
    if not install:
        return "nginx/fcgiwrap are not installed (and --no-install was given)"
    if os.geteuid() != 0:
        return "nginx/fcgiwrap are not installed and this is not root: apt-get install -y nginx fcgiwrap"
    if not shutil.which("apt-get"):
        return "nginx/fcgiwrap are not installed and there is no apt-get"
    say("nginx/fcgiwrap missing: running apt-get install -y nginx fcgiwrap (as root)")
    env = {**base_env(), "DEBIAN_FRONTEND": "noninteractive"}
    argv = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "nginx", "fcgiwrap"]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=False)
        result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0 or not present():
        return f"apt-get install nginx fcgiwrap failed: {result.stderr.strip()[-500:]}"
    return None


NGINX_CONF = """\
{user}worker_processes 2;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size 0;
    server {{
        listen 127.0.0.1:{port};
        # The usual git-http-backend setup (git-http-backend(1), nginx wiki), nginx's
        # default buffering; request headers (Git-Protocol) reach it as HTTP_*.
        location / {{
            fastcgi_pass unix:{sock};
            fastcgi_param SCRIPT_FILENAME {backend};
            fastcgi_param GIT_PROJECT_ROOT {root};
            fastcgi_param GIT_HTTP_EXPORT_ALL "";
            fastcgi_param GIT_CONFIG_NOSYSTEM 1;
            fastcgi_param HOME {home};
            fastcgi_param PATH_INFO $uri;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param CONTENT_TYPE $content_type;
            fastcgi_param CONTENT_LENGTH $content_length;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REMOTE_ADDR $remote_addr;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param SERVER_PORT $server_port;
        }}
    }}
}}
"""


def setup_nginx(tmp: Path, master: Path, procs: Processes, git: Git) -> tuple[Server, dict]:
    root = tmp / "http-root"
    root.mkdir()
    repo = root / "big.git"
    shutil.copytree(master, repo, symlinks=True)
    git.run("--git-dir", str(repo), "config", "http.receivepack", "true")
    ndir = tmp / "nginx"
    ndir.mkdir()
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (ndir / sub).mkdir()
    sock = ndir / "fcgiwrap.sock"
    backend = Path(git.run("--exec-path").strip()) / "git-http-backend"
    if not backend.exists():
        raise SetupError(f"{backend} does not exist")
    port = free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must reach the root-owned socket
    conf = ndir / "nginx.conf"
    conf.write_text(
        NGINX_CONF.format(
            user=user, dir=ndir, port=port, sock=sock, backend=backend, root=root, home=tmp / "backend-home"
        )
    )
    (tmp / "backend-home").mkdir()
    fcgiwrap = shutil.which("fcgiwrap", path="/usr/sbin:/usr/bin:/sbin:/bin")
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/bin:/sbin:/bin")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C"}
    fproc = procs.start("fcgiwrap", [fcgiwrap, "-c", "2", "-s", f"unix:{sock}"], env=env)
    deadline = time.monotonic() + 15
    while not sock.exists():
        if fproc.poll() is not None or time.monotonic() > deadline:
            raise SetupError(f"fcgiwrap did not create {sock}:\n{procs.log_tail('fcgiwrap')}")
        time.sleep(0.05)
    nproc = procs.start(
        "nginx", [nginx, "-p", str(ndir), "-c", str(conf), "-e", str(ndir / "error.log")], env=env
    )
    try:
        wait_for_port(port, nproc, "nginx")
    except SetupError as exc:
        tail = (
            (ndir / "error.log").read_text(errors="replace")[-2000:] if (ndir / "error.log").exists() else ""
        )
        raise SetupError(f"{exc}\n{procs.log_tail('nginx')}\n{tail}") from None
    version = subprocess.run([nginx, "-v"], capture_output=True, text=True, check=False).stderr.strip()
    return Server("nginx", "nginx+http-backend", f"http://127.0.0.1:{port}/big.git"), {
        "port": port,
        "version": version,
        "repo_dir": str(repo),
    }


def setup_daemon(tmp: Path, master: Path, procs: Processes, git: Git) -> tuple[Server, dict]:
    root = tmp / "daemon-root"
    root.mkdir()
    repo = root / "big.git"
    shutil.copytree(master, repo, symlinks=True)
    port = free_port()
    argv = [
        GIT, "daemon", "--reuseaddr", f"--base-path={root}", "--export-all", "--enable=receive-pack",
        f"--port={port}", "--listen=127.0.0.1", "--informative-errors", str(root),
    ]  # fmt: skip
    proc = procs.start("git-daemon", argv, env=git.env)
    wait_for_port(port, proc, "git daemon")
    return Server("daemon", "git daemon", f"git://127.0.0.1:{port}/big.git"), {
        "port": port,
        "repo_dir": str(repo),
    }


# --- measurements ------------------------------------------------------------------------------


def record(server: Server, metric: str, value) -> None:
    server.samples.setdefault(metric, []).append(value)


def measure_clone(server: Server, git: Git, dest: Path, rnd: int) -> None:
    try:
        seconds = git.timed(
            "-c", "protocol.version=2", "clone", "--bare", "--no-local", "--quiet", server.url, str(dest)
        )
        size = pack_bytes(dest)
        record(server, "clone_s", seconds)
        record(server, "clone_pack_bytes", size)
        record(server, "clone_mib_s", size / MIB / seconds)
    except (MeasureError, subprocess.TimeoutExpired) as exc:
        server.errors.append(f"round {rnd} clone: {exc}")
        for metric in ("clone_s", "clone_pack_bytes", "clone_mib_s"):
            record(server, metric, None)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def measure_fetch(server: Server, git: Git, rnd: int) -> None:
    try:
        ms = 1000 * git.timed(
            "-c", "protocol.version=2", "-C", str(server.fetch_dir), "fetch", "--quiet", "origin"
        )
        record(server, "fetch_ms", ms)
    except (MeasureError, subprocess.TimeoutExpired) as exc:
        server.errors.append(f"round {rnd} fetch: {exc}")
        record(server, "fetch_ms", None)


class Pusher:
    """Makes one small new commit on top of the default branch for every push."""

    def __init__(self, git: Git, work: Path):
        self.git = git
        self.work = work
        gd = ("--git-dir", str(work))
        self.base = git.run(*gd, "rev-parse", "HEAD^{commit}").strip()
        self.base_tree = git.run(*gd, "ls-tree", self.base)

    def commit(self, name: str) -> str:
        gd = ("--git-dir", str(self.work))
        blob = self.git.run(
            *gd, "hash-object", "-w", "--stdin", input=f"bench push {name}\n".encode()
        ).strip()
        tree = self.git.run(
            *gd, "mktree", input=(self.base_tree + f"100644 blob {blob}\t{name}.txt\n").encode()
        )
        return self.git.run(
            *gd, "commit-tree", tree.strip(), "-p", self.base, "-m", f"bench push {name}"
        ).strip()

    def push(self, server: Server, name: str) -> float:
        commit = self.commit(name)
        ref = f"refs/heads/{name}"
        gd = ("--git-dir", str(self.work))
        ms = 1000 * self.git.timed(*gd, "push", "--quiet", server.url, f"{commit}:{ref}")
        # Untimed: delete the branch again, so the next no-op fetch really is one.
        self.git.run(*gd, "push", "--quiet", server.url, f":{ref}")
        return ms


def measure_push(server: Server, pusher: Pusher, name: str, rnd: int) -> None:
    try:
        record(server, "push_ms", pusher.push(server, name))
    except (MeasureError, subprocess.TimeoutExpired) as exc:
        server.errors.append(f"round {rnd} push: {exc}")
        record(server, "push_ms", None)


def time_runs(argv: list[str], *, env: dict[str, str], n: int, stdin: bytes | None = None, cwd=None) -> dict:
    times, failures, last_err = [], 0, ""
    for _ in range(n):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, env=env, cwd=cwd, check=False)
        times.append(1000 * (time.perf_counter() - t0))
        if proc.returncode != 0:
            failures += 1
            last_err = proc.stderr.decode(errors="replace").strip()[-500:]
    return {"n": n, "median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "failures": failures, "last_error": last_err, "samples_ms": times}  # fmt: skip


def measure_hooks(hooks_dir: Path, hostsite: dict, tmp: Path, *, runs: int, django_runs: int) -> dict:
    updates = tmp / "hook-ref-updates"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOSTSITE_PUSHER": "bench",
        "HOSTSITE_ROLE": "admin",
        "HOSTSITE_REPO_ID": "1",
        "HOSTSITE_REF_UPDATES_FILE": str(updates),
        "GIT_DIR": hostsite["repo_dir"],
    }
    line = f"{ZERO_OID} {'1' * 40} refs/heads/bench-hook\n".encode()
    results: dict = {}
    for name in ("pre-receive", "post-receive"):
        hook = hooks_dir / name
        if not os.access(hook, os.X_OK):
            results[name] = {"error": f"{hook} is missing or not executable"}
    # Interleaved, so both hooks see the same noise.
    samples: dict[str, list[dict]] = {"pre-receive": [], "post-receive": []}
    for _ in range(runs):
        for name in samples:
            if name in results:
                continue
            samples[name].append(time_runs([str(hooks_dir / name)], env=env, n=1, stdin=line))
            updates.write_bytes(b"")
    for name, runs_ in samples.items():
        if name in results:
            continue
        times = [r["median_ms"] for r in runs_]
        results[name] = {
            "n": len(times),
            "median_ms": statistics.median(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "failures": sum(r["failures"] for r in runs_),
            "last_error": next((r["last_error"] for r in runs_ if r["last_error"]), ""),
        }
    results["python -IS -c pass"] = time_runs([PY, "-IS", "-c", "pass"], env=env, n=runs)
    denv = {k: v for k, v in hostsite["env"].items()}
    results["django.setup()"] = time_runs(
        [PY, "-c", "import django; django.setup()"], env=denv, n=django_runs, cwd=BASE_DIR
    )
    for r in results.values():
        r.pop("samples_ms", None)
    return results


# --- report ------------------------------------------------------------------------------------


def med(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values: list) -> tuple[float, float] | None:
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else None


def paired(a: list, b: list, op) -> float | None:
    pairs = [op(x, y) for x, y in zip(a, b, strict=False) if x is not None and y is not None]
    return statistics.median(pairs) if pairs else None


def fmt(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


def build_report(servers: list[Server], hooks: dict, meta: dict) -> dict:
    by_key = {s.key: s for s in servers}
    medians = {}
    for s in servers:
        medians[s.key] = {metric: med(values) for metric, values in s.samples.items()}
        medians[s.key]["spread"] = {metric: spread(values) for metric, values in s.samples.items()}
    ratios: dict = {}
    hs = by_key.get("hostsite")
    for key in ("nginx", "daemon"):
        base = by_key.get(key)
        if hs is None or base is None:
            continue
        h, b = medians["hostsite"], medians[key]
        ratios[key] = {
            "clone_throughput_ratio": (h["clone_mib_s"] / b["clone_mib_s"])
            if h.get("clone_mib_s") and b.get("clone_mib_s")
            else None,
            "clone_throughput_ratio_paired": paired(
                hs.samples.get("clone_mib_s", []), base.samples.get("clone_mib_s", []), lambda x, y: x / y
            ),
            "push_delta_ms": (h["push_ms"] - b["push_ms"])
            if h.get("push_ms") is not None and b.get("push_ms") is not None
            else None,
            "push_delta_ms_paired": paired(
                hs.samples.get("push_ms", []), base.samples.get("push_ms", []), lambda x, y: x - y
            ),
            "fetch_ratio": (h["fetch_ms"] / b["fetch_ms"])
            if h.get("fetch_ms") and b.get("fetch_ms")
            else None,
            "fetch_ratio_paired": paired(
                hs.samples.get("fetch_ms", []), base.samples.get("fetch_ms", []), lambda x, y: x / y
            ),
        }
    nginx = ratios.get("nginx", {})
    clone_ratio = nginx.get("clone_throughput_ratio")
    push_delta = nginx.get("push_delta_ms")
    targets = {
        "clone_throughput_ratio_vs_nginx": {
            "value": clone_ratio,
            "target": f">= {CLONE_RATIO_TARGET}",
            "ok": None if clone_ratio is None else clone_ratio >= CLONE_RATIO_TARGET,
        },
        "push_delta_ms_vs_nginx": {
            "value": push_delta,
            "target": f"<= {PUSH_DELTA_TARGET_MS:.0f}",
            "ok": None if push_delta is None else push_delta <= PUSH_DELTA_TARGET_MS,
        },
    }
    for name in ("pre-receive", "post-receive"):
        m = hooks.get(name, {}).get("median_ms")
        targets[f"{name}_median_ms"] = {
            "value": m,
            "target": f"<= {HOOK_TARGET_MS:.0f}",
            "ok": None if m is None else (m <= HOOK_TARGET_MS and not hooks[name].get("failures")),
        }
    return {
        "meta": meta,
        "servers": {
            s.key: {"label": s.label, "samples": s.samples, "errors": s.errors, "medians": medians[s.key]}
            for s in servers
        },
        "ratios_vs": ratios,
        "hooks": hooks,
        "targets": targets,
    }


def print_report(report: dict, servers: list[Server]) -> None:
    meta = report["meta"]
    out = []
    out.append("")
    out.append(f"hostsite smart HTTP benchmark: {meta['rounds']} rounds x (clone, {meta['reps']} no-op fetches, "
               f"{meta['reps']} pushes), servers interleaved in every round")  # fmt: skip
    out.append(f"repository: {meta['repository']}")
    out.append(
        f"pack: {meta['pack_mib']:.1f} MiB, {meta['objects']} objects, {meta['refs']} refs; all servers serve the "
        f"identical pack ({meta['pack_name']}), repacked once with `git repack -adb` + commit-graph"
    )
    out.append(f"git {meta['git_version']}; {meta.get('nginx_version') or 'nginx: not run'}; "
               f"{meta['cpus']} CPUs; load avg before {meta['loadavg_before']}")  # fmt: skip
    for key, reason in meta.get("skipped", {}).items():
        out.append(f"SKIPPED {key}: {reason}")
    out.append("")
    cols = [s.key for s in servers]
    labels = {s.key: s.label for s in servers}
    width = 24
    out.append(f"{'median [min-max]':<26}" + "".join(f"{labels[c]:>{width}}" for c in cols))
    rows = [
        ("full clone MiB/s", "clone_mib_s", ".1f"),
        ("full clone s", "clone_s", ".2f"),
        ("no-op fetch ms", "fetch_ms", ".0f"),
        ("small push ms", "push_ms", ".0f"),
    ]
    for title, metric, spec in rows:
        cells = []
        for c in cols:
            m = report["servers"][c]["medians"]
            value = m.get(metric)
            sp = m["spread"].get(metric)
            cell = fmt(value, spec) + (f" [{sp[0]:{spec}}-{sp[1]:{spec}}]" if sp else "")
            cells.append(f"{cell:>{width}}")
        out.append(f"{title:<26}" + "".join(cells))
    out.append("")
    out.append("ratios (medians of this run; 'paired' = median of the per-round side-by-side ratios):")
    targets = report["targets"]
    for key, label in (("nginx", "nginx+http-backend"), ("daemon", "git daemon")):
        r = report["ratios_vs"].get(key)
        if not r:
            continue
        out.append(f"  hostsite vs {label}:")
        line = (f"    clone throughput ratio   {fmt(r['clone_throughput_ratio'], '.3f'):>7}"
                f"  (paired {fmt(r['clone_throughput_ratio_paired'], '.3f')})")  # fmt: skip
        if key == "nginx":
            t = targets["clone_throughput_ratio_vs_nginx"]
            line += f"   target {t['target']}  {verdict(t['ok'])}"
        out.append(line)
        line = (f"    push latency delta   {fmt(r['push_delta_ms'], '+.0f'):>8} ms"
                f"  (paired {fmt(r['push_delta_ms_paired'], '+.0f')} ms)")  # fmt: skip
        if key == "nginx":
            t = targets["push_delta_ms_vs_nginx"]
            line += f"   target {t['target']} ms  {verdict(t['ok'])}"
        out.append(line)
        out.append(f"    no-op fetch ratio        {fmt(r['fetch_ratio'], '.2f'):>7}"
                   f"  (paired {fmt(r['fetch_ratio_paired'], '.2f')})  (hostsite ms / {label} ms)")  # fmt: skip
    hooks = report["hooks"]
    if hooks:
        out.append("")
        out.append("hooks, run directly with the platform's HOSTSITE_* environment and one ref-update line:")
        for name in ("pre-receive", "post-receive", "python -IS -c pass", "django.setup()"):
            h = hooks.get(name)
            if not h:
                continue
            if "error" in h:
                out.append(f"  {name:<22} {h['error']}")
                continue
            line = f"  {name:<22} median {h['median_ms']:7.1f} ms  [{h['min_ms']:.1f}-{h['max_ms']:.1f}]  N={h['n']}"
            if name in ("pre-receive", "post-receive"):
                t = targets[f"{name}_median_ms"]
                line += f"   target {t['target']} ms  {verdict(t['ok'])}"
                if h.get("failures"):
                    line += f"  ({h['failures']} runs exited non-zero: {h['last_error'][:200]})"
            elif name == "django.setup()":
                pre = hooks.get("pre-receive", {}).get("median_ms")
                if pre:
                    line += f"   (a Django-booting hook; {h['median_ms'] / pre:.0f}x the pre-receive median)"
            else:
                line += "   (interpreter floor for a -IS hook)"
            out.append(line)
    errors = [(s.label, e) for s in servers for e in s.errors]
    if errors:
        out.append("")
        out.append(f"{len(errors)} failed measurements (excluded from medians):")
        for label, e in errors[:20]:
            out.append(f"  {label}: {e[:400]}")
    out.append("")
    out.append(
        "targets: "
        + ", ".join(f"{k} {verdict(v['ok'])}" for k, v in targets.items())
        + f"   (whole run {meta['elapsed_s']:.0f} s)"
    )
    print("\n".join(out), flush=True)


# --- main --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument(
        "--reps", type=int, default=3, help="no-op fetches and pushes per server per round (default 3)"
    )
    p.add_argument(
        "--repo", type=Path, help="benchmark this repository (mirrored) instead of a generated one"
    )
    p.add_argument("--size-mb", type=int, default=112, help="random data in the generated repository, MiB")
    p.add_argument("--commits", type=int, default=300, help="commits in the generated repository")
    p.add_argument("--seed", type=int, default=20240601, help="seed of the generated repository")
    p.add_argument("--hook-runs", type=int, default=50, help="runs of each hook (default 50)")
    p.add_argument("--django-runs", type=int, default=10, help="runs of django.setup() (default 10)")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--no-install", action="store_true", help="never apt-get install nginx/fcgiwrap")
    p.add_argument("--no-nginx", action="store_true", help="skip the nginx + http-backend baseline")
    p.add_argument("--no-daemon", action="store_true", help="skip the git daemon baseline")
    p.add_argument("--tmpdir", type=Path, help="where the temporary directory goes (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, repositories)")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.reps < 1 or args.hook_runs < 1 or args.django_runs < 1:
        p.error("--rounds, --reps, --hook-runs and --django-runs must be at least 1")
    return args


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt


def hostsite_revision(git: Git) -> str:
    try:
        rev = git.run("-C", str(BASE_DIR), "rev-parse", "--short", "HEAD").strip()
        dirty = git.run("-C", str(BASE_DIR), "status", "--porcelain", "--untracked-files=no").strip()
        return rev + ("+dirty" if dirty else "")
    except MeasureError:
        return "unknown"


def run(args: argparse.Namespace, tmp: Path, procs: Processes) -> dict:
    git = Git(client_env(tmp / "client-home"), [])
    meta: dict = {
        "rounds": args.rounds,
        "reps": args.reps,
        "git_version": git.run("version").strip().removeprefix("git version "),
        "hostsite_revision": hostsite_revision(git),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "skipped": {},
    }

    # 1. One master repository, repacked once; its packs go to every server.
    master = tmp / "master.git"
    t0 = time.monotonic()
    if args.repo:
        source = args.repo.expanduser().resolve()
        try:
            git.run("--git-dir", str(source), "rev-parse", "--git-dir")
        except MeasureError:
            try:
                git.run("-C", str(source), "rev-parse", "--git-dir")
            except MeasureError as exc:
                raise SetupError(f"--repo {source} is not a git repository: {exc}") from None
        say(f"mirroring {source}")
        try:
            git.run("clone", "--mirror", "--no-local", "--quiet", str(source), str(master))
        except MeasureError as exc:
            raise SetupError(str(exc)) from None
        meta["repository"] = f"{source} (mirrored)"
    else:
        say(f"generating a repository: {args.commits} commits, ~{args.size_mb} MiB of seeded random blobs")
        generate_repository(master, git, size_mb=args.size_mb, commits=args.commits, seed=args.seed)
        meta["repository"] = (
            f"generated (seed {args.seed}, {args.commits} commits, text + ~{args.size_mb} MiB random blobs)"
        )
    say("git repack -adb + commit-graph (once; the same pack files are installed in all servers)")
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-b", "-q")
    git.run("--git-dir", str(master), "commit-graph", "write", "--reachable")
    packs = [p for p in pack_files(master) if p.suffix == ".pack"]
    if len(packs) != 1:
        raise SetupError(f"expected one pack after repack, found {len(packs)}")
    meta["setup_repo_s"] = round(time.monotonic() - t0, 1)
    meta["pack_mib"] = pack_bytes(master) / MIB
    meta["pack_name"] = packs[0].name
    count = git.run("--git-dir", str(master), "count-objects", "-v")
    meta["objects"] = int(next(x.split()[1] for x in count.splitlines() if x.startswith("in-pack:")))
    master_refs = refs_of(git, master)
    meta["refs"] = len(master_refs.splitlines())
    if meta["pack_mib"] < 100:
        say(f"note: the pack is {meta['pack_mib']:.1f} MiB, below the 100 MiB the issue asks for")
    say(f"pack {meta['pack_mib']:.1f} MiB, {meta['objects']} objects, {meta['refs']} refs")

    # 2. Servers.
    servers: list[Server] = []
    hs, hs_repo, hs_info = setup_hostsite(tmp, master, procs, git)
    servers.append(hs)
    meta["hostsite"] = {k: v for k, v in hs_info.items() if k != "env"}
    if args.no_nginx:
        meta["skipped"]["nginx"] = "--no-nginx"
    else:
        reason = ensure_debian_packages(not args.no_install)
        if reason:
            say(f"SKIPPING nginx + http-backend: {reason}")
            meta["skipped"]["nginx"] = reason
        else:
            say("nginx + fcgiwrap + git http-backend: start")
            server, info = setup_nginx(tmp, master, procs, git)
            servers.append(server)
            meta["nginx_version"] = info["version"]
            meta["nginx"] = info
    if args.no_daemon:
        meta["skipped"]["daemon"] = "--no-daemon"
    else:
        say("git daemon: start")
        server, info = setup_daemon(tmp, master, procs, git)
        servers.append(server)
        meta["daemon"] = info
    if refs_of(git, hs_repo) != master_refs:
        raise SetupError("hostsite's copy does not have the same refs as the master repository")
    meta["repo_config_note"] = (
        "hostsite's copy keeps the platform's config (receive/transfer.fsckObjects, reflogs, hooks); "
        "the baselines' copies have git's defaults plus http.receivepack for http-backend"
    )

    # 3. Warm-up (untimed): every server answers ls-remote with the master's refs, a clone
    # that later serves the no-op fetches, and one push.
    work = tmp / "push-work.git"
    git.run("clone", "--bare", "--shared", "--quiet", str(master), str(work))
    pusher = Pusher(git, work)
    for s in servers:
        say(f"warm-up {s.label}: ls-remote, clone, fetch, push")
        try:
            remote = {tuple(x.split("\t")) for x in git.run("ls-remote", s.url).splitlines() if x}
            local = {tuple(x.split(" ", 1)) for x in master_refs.splitlines()}
            if not local <= remote:
                raise SetupError(f"{s.label} does not advertise the master's refs")
            s.fetch_dir = tmp / f"fetch-{s.key}"
            t = git.timed(
                "-c", "protocol.version=2", "clone", "--no-checkout", "--quiet", s.url, str(s.fetch_dir)
            )
            git.timed("-c", "protocol.version=2", "-C", str(s.fetch_dir), "fetch", "--quiet", "origin")
            p = pusher.push(s, f"bench-warmup-{s.key}")
        except MeasureError as exc:
            log = procs.log_tail({"daemon": "git-daemon"}.get(s.key, s.key))
            raise SetupError(f"warm-up against {s.label} failed: {exc}\n{log}") from None
        say(f"  clone {t:.1f}s, push {p:.0f} ms")

    # 4. Interleaved rounds.
    for rnd in range(args.rounds):
        say(f"round {rnd + 1}/{args.rounds}: clone")
        for s in servers:
            measure_clone(s, git, tmp / f"clone-{s.key}-{rnd}", rnd)
        say(f"round {rnd + 1}/{args.rounds}: no-op fetch x{args.reps}")
        for _ in range(args.reps):
            for s in servers:
                measure_fetch(s, git, rnd)
        say(f"round {rnd + 1}/{args.rounds}: push x{args.reps}")
        for rep in range(args.reps):
            for s in servers:
                measure_push(s, pusher, f"bench-push-{s.key}-{rnd}-{rep}", rnd)
        line = "  ".join(
            f"{s.key}: {fmt(s.samples['clone_mib_s'][-1])} MiB/s, "
            f"fetch {fmt(med(s.samples['fetch_ms'][-args.reps :]), '.0f')} ms, "
            f"push {fmt(med(s.samples['push_ms'][-args.reps :]), '.0f')} ms"
            for s in servers
        )
        say(f"  {line}")

    # 5. Hooks.
    say(f"hooks: {args.hook_runs} runs each, django.setup() x{args.django_runs}")
    hooks = measure_hooks(
        Path(hs_info["hooks_dir"]), hs_info, tmp, runs=args.hook_runs, django_runs=args.django_runs
    )
    meta["elapsed_s"] = time.monotonic() - _T0
    meta["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report = build_report(servers, hooks, meta)
    print_report(report, servers)
    return report


def sibling_module(name: str):
    """Another benchmark script of bench/ as a module (`import bundles` would find the Django
    app of that name, not bench/bundles.py)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", Path(__file__).resolve().parent / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_benchmark(script: str, prefix: str, args, run_fn) -> int:
    """The frame every benchmark here shares: a temporary directory, the processes it starts,
    the JSON report, and a cleanup that Ctrl-C, SIGTERM or a setup failure cannot skip.
    `run_fn(tmp, procs)` returns the report."""
    # Ctrl-C and SIGTERM both end in the cleanup below, even if SIGINT was ignored when we
    # started (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=args.tmpdir))
    logs = tmp / "logs"
    logs.mkdir()
    procs = Processes(logs)
    status = 0
    try:
        report = run_fn(tmp, procs)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
            say(f"wrote {args.json}")
    except SetupError as exc:
        print(f"{script}: setup failed: {exc}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print(f"{script}: interrupted", file=sys.stderr)
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip the cleanup
        procs.stop_all()
        if args.keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    return status


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_benchmark(
        "bench/smart_http.py", "hostsite-bench-", args, lambda tmp, procs: run(args, tmp, procs)
    )


if __name__ == "__main__":
    sys.exit(main())
