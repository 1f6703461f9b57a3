"""A primary and replicas on loopback, as separate gunicorn and Celery processes with REPO_ROOTs
and VAR_DIRs of their own, sharing the test database (PostgreSQL), the broker (Redis) and the
bundle storage: what docker-compose runs, in one machine, for the live replication tests and
bench/replication.py."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hostsite import processes
from hostsite.queues import replica_queue
from tests import live


@dataclass
class Node:
    name: str
    role: str
    root: Path
    env: dict[str, str]
    port: int
    web: live.ManagedProcess | None = None
    worker: live.ManagedProcess | None = None
    logs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.logs = self.root / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def repo_root(self) -> Path:
        return Path(self.env["REPO_ROOT"])

    @property
    def hostname(self) -> str:
        # A name of its own: remote control must tell the three workers apart.
        return f"{self.name}@cluster"

    @property
    def queue(self) -> str:
        return replica_queue(self.name) if self.role == "replica" else self.env["CELERY_QUEUE"]

    def start_web(self, **extra: str) -> None:
        """Start the web server, with `extra` settings for this run of it only."""
        self.web = live.start_web({**self.env, **extra}, self.port, self.logs)

    def start_worker(self) -> None:
        # Each start logs to a new file: "ready." must be this start's.
        logs = self.logs / f"worker-{time.monotonic_ns()}"
        logs.mkdir()
        self.worker = live.start_worker(self.env, logs, queue=self.queue, hostname=self.hostname)

    def stop_web(self) -> None:
        if self.web is not None:
            self.web.stop()
            self.web = None

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop(group=True)
            self.worker = None

    def kill_worker(self) -> None:
        """SIGKILL the worker's whole process group: its pool and the git it runs die mid-task."""
        if self.worker is not None:
            processes.signal_group(self.worker.proc, 9)
            self.worker.proc.wait()
            self.worker = None

    def stop(self) -> None:
        self.stop_worker()
        self.stop_web()

    def repo_path(self, repo) -> Path:
        from repos.storage import shard_for

        return self.repo_root / shard_for(repo.pk) / f"{repo.pk}.git"

    def refs(self, repo) -> dict[str, str]:
        """Every ref of the node's copy (all namespaces), or {} when it has none."""
        path = self.repo_path(repo)
        if not path.exists():
            return {}
        out = subprocess.run(
            ["git", "for-each-ref", "--format=%(objectname) %(refname)"],
            cwd=path,
            capture_output=True,
            text=True,
            check=True,
            env=git_env(),
        ).stdout
        return {ref: oid for oid, ref in (line.split(" ", 1) for line in out.splitlines())}

    def has_object(self, repo, oid: str) -> bool:
        path = self.repo_path(repo)
        return (
            path.exists()
            and subprocess.run(
                ["git", "cat-file", "-e", oid], cwd=path, env=git_env(), check=False
            ).returncode
            == 0
        )


def git_env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


class Cluster:
    """`primary` and `replicas`; node names carry a per-cluster suffix, so the replica queues of
    two test runs sharing Redis never meet."""

    def __init__(self, base_env: dict[str, str], root: Path, *, replicas: int = 2, **settings: str) -> None:
        suffix = uuid.uuid4().hex[:6]
        self.nodes: list[Node] = []
        primary_port = live.free_port()
        common = {
            **base_env,
            "NODE_HEARTBEAT_SECONDS": "1",
            "NODE_DOWN_SECONDS": "6",
            # A killed worker's fetch goes back to the queue within seconds, not minutes.
            "CELERY_VISIBILITY_TIMEOUT": "10",
            **settings,
        }
        for index in range(replicas + 1):
            role = "primary" if index == 0 else "replica"
            name = f"p-{suffix}" if index == 0 else f"r{index}-{suffix}"
            node_root = root / name
            port = primary_port if index == 0 else live.free_port()
            env = {
                **common,
                "HOSTSITE_NODE": name,
                "HOSTSITE_ROLE": role,
                "NODE_URL": f"http://127.0.0.1:{port}",
                "VAR_DIR": str(node_root / "var"),
                "PUSH_SPOOL_DIR": str(node_root / "spool"),
            }
            if role == "replica":
                env["REPO_ROOT"] = str(node_root / "repos")
                env["PRIMARY_URL"] = f"http://127.0.0.1:{primary_port}"
            else:
                env.pop("PRIMARY_URL", None)
                # The test process creates repositories here: the primary's disk is the session's.
                env["REPO_ROOT"] = base_env["REPO_ROOT"]
            self.nodes.append(Node(name, role, node_root, env, port))

    @property
    def primary(self) -> Node:
        return self.nodes[0]

    @property
    def replicas(self) -> list[Node]:
        return self.nodes[1:]

    def start(self) -> None:
        try:
            for node in self.nodes:
                node.start_web()
                node.start_worker()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()
        live.empty_queues(*(node.queue for node in self.replicas), delete=True)

    def wait_live(self, timeout: float = 30.0) -> None:
        """Wait until every node is registered and seen (a test database's flush deletes the
        rows; heartbeats bring them back within a beat), then past the dispatchers' cache of
        which replicas are live."""
        from replication.models import Node as NodeRow
        from replication.nodes import LIVE_CACHE_SECONDS

        names = {node.name for node in self.nodes if node.worker is not None}
        deadline = time.monotonic() + timeout
        while set(NodeRow.objects.filter(name__in=names).values_list("name", flat=True)) != names:
            if time.monotonic() > deadline:
                raise AssertionError(f"nodes not registered in {timeout} s: {names}")
            time.sleep(0.05)
        time.sleep(LIVE_CACHE_SECONDS + 0.1)

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until no node's worker runs or holds a task and their queues are empty: a test's
        last pushes leave syncs and indexing behind, which must not write into the rows of the
        next test (or race its database's flush). Tasks waiting for an ETA are revoked."""
        from hostsite.celery import app

        names = [node.hostname for node in self.nodes if node.worker is not None]
        if not names:
            return
        inspect = app.control.inspect(destination=names, timeout=10.0)
        deadline = time.monotonic() + timeout
        while True:
            active, reserved, scheduled = inspect.active(), inspect.reserved(), inspect.scheduled()
            answered = all(
                replies is not None and set(names) <= set(replies)
                for replies in (active, reserved, scheduled)
            )
            if answered and scheduled:
                waiting = [task["request"]["id"] for tasks in scheduled.values() for task in tasks]
                if waiting:
                    app.control.revoke(waiting, destination=names)
            idle = answered and not any(active.values()) and not any(reserved.values())  # type: ignore[union-attr]
            # Asked after the workers: a task that ended while they answered queued its follow-up by now.
            if idle and not any(live.queue_length(node.queue) for node in self.nodes):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"the cluster's workers were still busy after {timeout} s: {active}")
            time.sleep(0.1)

    def wait_replicated(self, repo, *, nodes: list[Node] | None = None, timeout: float = 30.0) -> int:
        """Wait until every replica (or `nodes`) holds the repository's current generation; return it."""
        from replication.models import ReplicaState
        from repos.models import Repository

        nodes = self.replicas if nodes is None else nodes
        names = {node.name for node in nodes}
        deadline = time.monotonic() + timeout
        while True:
            generation = Repository.objects.filter(pk=repo.pk).values_list("generation", flat=True).get()
            held = dict(
                ReplicaState.objects.filter(node__name__in=names, repository_id=repo.pk).values_list(
                    "node__name", "generation"
                )
            )
            if all(held.get(name, -1) >= generation for name in names):
                return generation
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not replicated in {timeout} s: generation {generation}, replicas {held}"
                )
            time.sleep(0.05)

    def wait_converged(self, repo, *, timeout: float = 60.0) -> dict[str, str]:
        """Wait until every replica holds the current generation with the primary's very refs,
        and return them. The primary's own follow-up work (merged-ref cleanup, maintenance) may
        add changes while this waits: it compares again until nothing moves."""
        from repos.models import Repository

        deadline = time.monotonic() + timeout
        while True:
            generation = self.wait_replicated(repo, timeout=max(1.0, deadline - time.monotonic()))
            refs = self.primary.refs(repo)
            same = all(node.refs(repo) == refs for node in self.replicas)
            now = Repository.objects.filter(pk=repo.pk).values_list("generation", flat=True).get()
            if same and now == generation:
                return refs
            if time.monotonic() > deadline:
                differing = {node.name: node.refs(repo) for node in self.replicas if node.refs(repo) != refs}
                raise AssertionError(f"replicas differ from the primary {refs}: {differing}")
            time.sleep(0.1)


def require_shared_backends(live_env: dict[str, str]) -> None:
    """Skip unless the test database is PostgreSQL and the broker Redis: the nodes share them."""
    import pytest
    from django.db import connection

    if connection.vendor != "postgresql" or not live_env.get("CELERY_BROKER_URL", "").startswith("redis"):
        pytest.skip(
            "the nodes of a cluster share PostgreSQL and Redis: run with DATABASE_URL and CELERY_BROKER_URL"
        )


@contextlib.contextmanager
def primary_web_with(cluster: Cluster, **extra: str) -> Iterator[None]:
    """The primary's web server restarted with `extra` settings (REPLICATION_MIN_ACKS, say)
    for the block, then as it was."""
    cluster.primary.stop_web()
    cluster.primary.start_web(**extra)
    try:
        yield
    finally:
        cluster.primary.stop_web()
        cluster.primary.start_web()


@contextlib.contextmanager
def running_cluster(base_env: dict[str, str], root: Path, **kwargs) -> Iterator[Cluster]:
    cluster = Cluster(base_env, root, **kwargs)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


# --- a client of the cluster ----------------------------------------------------------------


def git(*args, cwd=None, env=None, check=True, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=timeout
    )


def work_tree(tmp_path, env, name="work"):
    path = tmp_path / name
    git("init", "-q", "-b", "main", str(path), env=env)
    git("config", "user.name", "Alice", cwd=path, env=env)
    git("config", "user.email", "alice@example.invalid", cwd=path, env=env)
    return path


def commit(path, env, name: str, content: str | bytes) -> str:
    file = path / name
    file.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_text(content)
    git("add", name, cwd=path, env=env)
    git("commit", "-q", "-m", f"add {name}", cwd=path, env=env)
    return git("rev-parse", "HEAD", cwd=path, env=env).stdout.strip()


def served_by(url: str, headers: dict[str, str] | None = None) -> str:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.headers.get("X-Hostsite-Node", "")
