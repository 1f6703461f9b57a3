"""bench.ssh's setup outside the measurements: the generated repository, and hostsite's side
(database, user, repository, key, ssh_prepare, the gateway and sshd) as `make run` starts it."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.harness import (
    BASE_DIR,
    MIB,
    PY,
    Git,
    Processes,
    SetupError,
    free_port,
    hostsite_env,
    manage,
    repo_create,
    say,
    wait_for_port,
)
from bench.harness.history import Buffered, HistoryGenerator, fast_import
from bench.harness.repository import install_packs, pack_bytes, pack_files
from hostsite import processes
from hostsite.processes import StartupError

DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/hostsite"

REGISTER_KEY = r"""
import subprocess, sys
import django
django.setup()
from repos.models import User
from sshgit.models import PublicKey

key_type, key_data = sys.argv[1].split()[:2]
fingerprint = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", sys.argv[2]],
                             capture_output=True, text=True, check=True).stdout.split()[1]
PublicKey.objects.create(user=User.objects.get(username="bench"), title="bench", key_type=key_type,
                         key_data=key_data, fingerprint=fingerprint)
"""

COUNT_PUSHES = r"""
import django
django.setup()
from repos.models import Push
print(Push.objects.filter(protocol="ssh").count())
"""


def generate_master(tmp: Path, git: Git, *, commits: int, assets_mb: int, seed: int, meta: dict) -> Path:
    """Source-like history with a binary asset every `commits / 96` commits, packed as a server's
    gc would leave it: fresh deltas (`-f`), assets not deltified, bitmaps, a commit-graph."""
    master = tmp / "master.git"
    t0 = time.monotonic()
    say(f"generating {commits} commits + {assets_mb} MiB of assets (seed {seed}) with fast-import")
    git.run("init", "--bare", "--quiet", "--initial-branch=main", str(master))
    gen = HistoryGenerator(seed)
    rng = random.Random(seed + 1)  # noqa: S311 - deterministic data, not security
    assets = 96 if assets_mb else 0
    every = max(1, commits // assets) if assets else 0
    asset_bytes = assets_mb * MIB // assets if assets else 0

    def writer(out) -> None:
        buffered = Buffered(out)
        mark, written = 0, 0
        for k in range(commits):
            mark += 1
            gen.commit(buffered, ref="refs/heads/main", mark=mark, parents=[])
            if every and k % every == every - 1 and written < assets:
                mark += 1
                data = rng.randbytes(asset_bytes)
                msg = f"Add asset {written}\n".encode()
                buffered.write(
                    f"commit refs/heads/main\nmark :{mark}\n"
                    f"author Bench <bench@example.invalid> {gen.ts} +0000\n"
                    f"committer Bench <bench@example.invalid> {gen.ts} +0000\ndata {len(msg)}\n".encode()
                    + msg + f"M 100644 inline assets/a{written:03d}.bin\ndata {len(data)}\n".encode()
                    + data + b"\n\n"
                )  # fmt: skip
                written += 1
            if k % 2000 == 1999:
                buffered.write(f"reset refs/tags/v{k // 2000}\nfrom :{mark}\n\n".encode())
        buffered.flush()

    fast_import(master, git, writer)
    (master / "info").mkdir(exist_ok=True)
    (master / "info" / "attributes").write_text("*.bin -delta\n")
    say("git repack -adfb --window=10 --depth=50 + commit-graph (once; both sides get these packs)")
    git.run("--git-dir", str(master), "repack", "-a", "-d", "-f", "-b", "-q", "--window=10", "--depth=50")
    git.run("--git-dir", str(master), "commit-graph", "write", "--reachable")
    meta["setup_repo_s"] = round(time.monotonic() - t0, 1)
    meta["pack_mib"] = pack_bytes(master) / MIB
    count = git.run("--git-dir", str(master), "count-objects", "-v")
    meta["objects"] = int(next(x.split()[1] for x in count.splitlines() if x.startswith("in-pack:")))
    meta["repository"] = (
        f"generated, {commits} commits + {assets_mb} MiB assets (seed {seed}), {meta['objects']} objects"
    )
    say(f"pack {meta['pack_mib']:.1f} MiB, {meta['objects']} objects, {meta['setup_repo_s']} s")
    return master


@dataclass
class Ours:
    port: int
    url: str
    env: dict[str, str]
    host_key_pub: Path
    runtime_dir: Path
    database: str
    pg_admin: str | None = None
    pg_name: str | None = None

    def pushes_recorded(self) -> int:
        return int(manage_py(self.env, COUNT_PUSHES).strip() or 0)


def manage_py(env: dict[str, str], code: str, *args: str) -> str:
    proc = subprocess.run(
        [PY, "-c", code, *args], env=env, cwd=BASE_DIR, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SetupError(f"python -c failed: {proc.stderr[-2000:]}")
    return proc.stdout


def _pg_database(tmp: Path) -> tuple[str, str, str]:
    """A fresh database beside DATABASE_URL's (or postgres@127.0.0.1's): (url, admin url, name)."""
    import psycopg

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        url = DEFAULT_PG
    parts = urlsplit(url)
    name = f"hostsite_sshbench_{tmp.name.rsplit('-', 1)[-1].lower()}"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise SetupError(f"PostgreSQL at {parts.hostname}:{parts.port}: {exc}") from None
    return urlunsplit(parts._replace(path="/" + name)), admin, name


def setup_ours(
    tmp: Path,
    master: Path,
    client_pub: str,
    procs: Processes,
    git: Git,
    *,
    database: str,
    profile_dir: Path | None = None,
) -> Ours:
    """`profile_dir`: sessions are served through bench.ssh_profile, which writes there."""
    var_dir = tmp / "hostsite-var"
    var_dir.mkdir()
    port = free_port()
    env = hostsite_env(var_dir, free_port())
    env.update({"SSH_PORT": str(port), "SSH_LISTEN": "127.0.0.1", "REPO_ROOT": str(var_dir / "repos")})
    ours = Ours(port, "", env, var_dir / "ssh" / "ssh_host_ed25519_key.pub", Path("/nonexistent"), "SQLite")
    if database == "postgres":
        env["DATABASE_URL"], ours.pg_admin, ours.pg_name = _pg_database(tmp)
        ours.database = f"PostgreSQL ({ours.pg_name})"
    manage(env, "migrate", "--noinput")
    manage(env, "user", "create", "bench")
    repo_dir = repo_create(env, "bench/big", "--default-branch", "main")
    _install(master, repo_dir, git)
    pub_file = tmp / "client-key.pub"
    manage_py(env, REGISTER_KEY, client_pub, str(pub_file))
    prepared = json.loads(manage(env, "ssh_prepare").strip().splitlines()[-1])
    if "sshd" not in prepared:
        raise SetupError(f"ssh_prepare: {prepared.get('unavailable', prepared)}")
    socket = Path(prepared["gateway_socket"])
    ours.runtime_dir = socket.parent
    user = prepared["url"].split("//")[1].split("@")[0]
    ours.url = f"ssh://{user}@127.0.0.1:{port}/bench/big.git"
    argv = [PY, str(BASE_DIR / "manage.py"), "ssh_gateway"]
    if profile_dir is not None:
        argv += ["--serve", "bench.ssh_profile:serve"]
        env = {**env, "HOSTSITE_SSH_PROFILE_DIR": str(profile_dir)}
    gateway = procs.start("ssh-gateway", argv, env=env, cwd=BASE_DIR)
    try:
        processes.wait_for_log(gateway, "listening on", timeout=60)
    except StartupError as exc:
        raise SetupError(f"the SSH gateway did not start: {exc}") from None
    sshd = procs.start("sshd", prepared["sshd"], env=env)
    wait_for_port(port, sshd, "hostsite's sshd")
    return ours


def _install(master: Path, repo_dir: Path, git: Git) -> None:
    """hostsite's (empty) repository gets the master's packs, commit-graph and refs: an import
    would check every object again, and the packs would no longer be byte-identical."""
    install_packs(master, repo_dir)
    refs = git.run("--git-dir", str(master), "for-each-ref", "--format=%(objectname) %(refname)")
    commands = "".join(
        f"update {name} {oid}\n" for oid, name in (line.split(" ", 1) for line in refs.splitlines())
    )
    git.run("--git-dir", str(repo_dir), "update-ref", "--stdin", input=commands.encode())
    if len([p for p in pack_files(repo_dir) if p.suffix == ".pack"]) != 1:
        raise SetupError("hostsite's copy should hold exactly the master's one pack")


def teardown_ours(ours: Ours | None) -> None:
    """After the processes stopped: the runtime directory under /run, the PostgreSQL database."""
    if ours is None:
        return
    if ours.runtime_dir.is_relative_to("/run/hostsite-ssh"):
        shutil.rmtree(ours.runtime_dir, ignore_errors=True)
    if ours.pg_admin and ours.pg_name:
        import psycopg

        try:
            with psycopg.connect(ours.pg_admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{ours.pg_name}"')
        except psycopg.Error as exc:
            say(f"could not drop {ours.pg_name}: {exc}")
