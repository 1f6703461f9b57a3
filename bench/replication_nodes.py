"""bench.replication's cluster: a primary and replicas as `make run` starts their programs
(gunicorn; a Celery worker on the default queue, or on `replica-<node>`), each with a VAR_DIR and
REPO_ROOT of its own, sharing a fresh PostgreSQL database, a Redis database and bundle storage."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness import PY, Processes, SetupError, free_port, hostsite_env, manage, say
from bench.harness.cpu import tree_cpu
from hostsite import processes
from hostsite.processes import Child

GUNICORN = processes.web_argv(PY, Path(__file__).resolve().parent.parent)


def fresh_database(url: str) -> None:
    """Drop and create the database named in `url` (postgres://user@host:port/name)."""
    import psycopg

    base, _, name = url.rpartition("/")
    if not name.replace("_", "").isalnum():
        raise SetupError(f"refusing to recreate database {name!r}")
    try:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise SetupError(f"cannot create {url}: {exc}") from None


@dataclass
class BenchNode:
    name: str
    role: str
    port: int
    env: dict[str, str]
    web: Child | None = None
    worker: Child | None = None
    starts: int = field(default=0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, procs: Processes, **extra: str) -> None:
        env = {**self.env, **extra}
        self.starts += 1
        tag = f"{self.name}-{self.starts}"
        self.web = procs.start(f"web-{tag}", GUNICORN, env={**env, "PORT": str(self.port)})
        processes.wait_for_http(f"{self.url}/", watch=[self.web], timeout=60)
        queue = env["CELERY_QUEUE"] if self.role == "primary" else f"replica-{self.name}"
        argv = processes.celery_argv(
            PY, "worker", "--concurrency", "2", "--queues", queue, "--without-mingle", "--without-gossip"
        )
        self.worker = procs.start(f"worker-{tag}", argv, env=env)
        processes.wait_for_log(self.worker, "ready.", timeout=60)

    def stop(self) -> None:
        for child in (self.worker, self.web):
            if child is not None:
                child.stop(20, group=True)
        self.web = self.worker = None

    def pin(self, cpus: set[int]) -> None:
        """Run the node's processes (every thread of every process of its trees) on `cpus`:
        nodes are separate machines in production, and sharing cores would charge the primary
        for the replicas' cache misses and context switches."""
        for child in (self.web, self.worker):
            if child is not None:
                pin_tree(child.pid, cpus)

    def cpu(self) -> float:
        """CPU seconds of the node's web server and worker trees, reaped children included."""
        return sum(tree_cpu(child.pid) for child in (self.web, self.worker) if child is not None)


def pin_tree(root: int, cpus: set[int]) -> None:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rfind(b")") + 2 :].split()[1]), []).append(int(entry))
    stack = [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tids:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, cpus)


class BenchCluster:
    def __init__(self, tmp: Path, database_url: str, broker_url: str, replicas: int = 2) -> None:
        suffix = uuid.uuid4().hex[:6]
        bundles = tmp / "bundles"
        bundles.mkdir()
        primary_port = free_port()
        self.nodes: list[BenchNode] = []
        for index in range(replicas + 1):
            role = "primary" if index == 0 else "replica"
            name = f"p-{suffix}" if index == 0 else f"r{index}-{suffix}"
            port = primary_port if index == 0 else free_port()
            var = tmp / name
            env = hostsite_env(var, port)
            env.update(
                {
                    "DATABASE_URL": database_url,
                    "CELERY_BROKER_URL": broker_url,
                    "CELERY_QUEUE": f"bench-{suffix}",
                    "BUNDLE_STORAGE_URL": f"file://{bundles}",
                    "HOSTSITE_NODE": name,
                    "HOSTSITE_ROLE": role,
                    "NODE_URL": f"http://127.0.0.1:{port}",
                    "NODE_HEARTBEAT_SECONDS": "1",
                    "NODE_DOWN_SECONDS": "4",
                    "REPLICA_MAX_LAG_SECONDS": "60",
                    "LOG_LEVEL": "WARNING",
                }
            )
            if role == "replica":
                env["PRIMARY_URL"] = f"http://127.0.0.1:{primary_port}"
            self.nodes.append(BenchNode(name, role, port, env))

    @property
    def primary(self) -> BenchNode:
        return self.nodes[0]

    @property
    def replicas(self) -> list[BenchNode]:
        return self.nodes[1:]

    def setup(self) -> None:
        say("migrating the shared database")
        manage(self.primary.env, "migrate", "--noinput")

    def generations(self, names: list[str]) -> dict[str, dict[str, int]]:
        """{repository full name: {"current": generation, <node>: held}} from the shared database."""
        script = (
            "import json, sys, django\ndjango.setup()\n"
            "from repos.models import Repository\nfrom replication.models import ReplicaState\n"
            "out = {}\n"
            "for r in Repository.objects.select_related('owner'):\n"
            "    if r.full_name in sys.argv[1:]:\n"
            "        out[r.full_name] = {'current': r.generation, **dict(ReplicaState.objects.filter("
            "repository=r).values_list('node__name', 'generation'))}\n"
            "print(json.dumps(out))\n"
        )
        import json

        out = subprocess.run(
            [PY, "-c", script, *names], env=self.primary.env, capture_output=True, text=True, check=True
        ).stdout
        return json.loads(out)

    def repository_ids(self, names: list[str]) -> list[int]:
        import psycopg

        with psycopg.connect(self.primary.env["DATABASE_URL"], autocommit=True) as conn:
            ids = dict(
                conn.execute(
                    "SELECT u.username || '/' || r.name, r.id FROM repos_repository r"
                    " JOIN repos_user u ON u.id = r.owner_id"
                ).fetchall()
            )
        return [ids[name] for name in names]

    def wait_replicated(self, names: list[str], timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        wanted = [n.name for n in self.replicas if n.web is not None]
        while True:
            state = self.generations(names)
            if all(all(row.get(node, -1) >= row["current"] for node in wanted) for row in state.values()):
                return
            if time.monotonic() > deadline:
                raise SetupError(f"replicas did not catch up in {timeout:.0f} s: {state}")
            time.sleep(0.2)


def served_tip(url: str, ref: bytes) -> tuple[str, str | None]:
    """(the node that answered, the ref's id in its v0 advertisement, or None)."""
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - the bench's own loopback URL
        node = response.headers.get("X-Hostsite-Node", "")
        body = response.read()
    pos = 0
    while pos + 4 <= len(body):
        length = int(body[pos : pos + 4], 16)
        if length < 4:  # flush-pkt
            pos += 4
            continue
        payload = body[pos + 4 : pos + length].split(b"\0", 1)[0].rstrip(b"\n")
        pos += length
        oid, _, name = payload.partition(b" ")
        if name == ref:
            return node, oid.decode()
    return node, None
