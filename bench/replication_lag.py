"""bench.replication's lag measurement: pushes at a steady rate, and a monitor of the shared
database that sees when each replica holds each push's generation."""

from __future__ import annotations

import threading
import time

from bench.harness import SetupError
from bench.replication_nodes import BenchCluster, served_tip

REPOS = 5


class Monitor(threading.Thread):
    """Polls the shared database every 5 ms for the generation each replica holds of each
    repository, and keeps when each one was first seen: the moment its ReplicaState row
    commits is the moment the replica serves that generation as current (replication.freshness),
    without the watcher's own requests loading the replicas' web servers."""

    def __init__(self, database_url: str, repo_ids: list[int]) -> None:
        super().__init__(daemon=True)
        self.database_url, self.repo_ids = database_url, repo_ids
        self.seen: dict[tuple[str, int], list[tuple[float, int]]] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self.stopped.is_set():
                rows = conn.execute(
                    "SELECT n.name, s.repository_id, s.generation FROM replication_replicastate s"
                    " JOIN replication_node n ON n.id = s.node_id WHERE s.repository_id = ANY(%s)",
                    [self.repo_ids],
                ).fetchall()
                now = time.perf_counter()
                for node, repo_id, generation in rows:
                    history = self.seen.setdefault((node, repo_id), [])
                    if not history or history[-1][1] != generation:
                        history.append((now, generation))
                time.sleep(0.005)

    def first_holding(self, node: str, repo_id: int, generation: int) -> float | None:
        return next((t for t, g in self.seen.get((node, repo_id), []) if g >= generation), None)


def generations_of(database_url: str, repo_id: int, tips: list[str]) -> dict[str, int]:
    """The generation of the push that moved main to each tip."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT u.new, c.generation FROM repos_repositorychange c JOIN repos_refupdate u"
            " ON u.push_id = c.push_id WHERE c.repository_id = %s AND u.ref = 'refs/heads/main'"
            " AND u.new = ANY(%s)",
            [repo_id, tips],
        ).fetchall()
    return dict(rows)


def measure_lag(
    cluster: BenchCluster, clients, repo_ids: list[int], pushes: int, rate: float, database_url: str
) -> tuple[list[float], float]:
    """Lag of every (push, replica), in ms, and the push rate achieved."""
    acked: list[tuple[int, str, float]] = []
    lock = threading.Lock()

    def repository_pusher(k: int, count: int, t0: float) -> None:
        # One thread per repository: its pushes never overlap (one work tree, one branch);
        # together they start a push every 1/rate seconds.
        for j in range(count):
            time.sleep(max(0.0, t0 + (k + j * REPOS) / rate - time.perf_counter()))
            tip, _, at = clients.push(k)
            with lock:
                acked.append((k, tip, at))

    monitor = Monitor(database_url, repo_ids)
    monitor.start()
    t0 = time.perf_counter()
    pushers = [
        threading.Thread(target=repository_pusher, args=(k, len(range(k, pushes, REPOS)), t0))
        for k in range(REPOS)
    ]
    for thread in pushers:
        thread.start()
    for thread in pushers:
        thread.join()
    achieved = pushes / (time.perf_counter() - t0)
    deadline = time.perf_counter() + 60
    lags: list[float] = []
    for k, repo_id in enumerate(repo_ids):
        mine = [(tip, at) for kk, tip, at in acked if kk == k]
        generation = generations_of(database_url, repo_id, [tip for tip, _ in mine])
        for tip, at in mine:
            for replica in cluster.replicas:
                while (seen := monitor.first_holding(replica.name, repo_id, generation[tip])) is None:
                    if time.perf_counter() > deadline:
                        raise SetupError(f"{replica.name} never held {tip[:10]} of repository {repo_id}")
                    time.sleep(0.05)
                # A replica may hold it before git push returns: the acknowledgement leaves the
                # primary after the change committed and the replicas were sent their jobs.
                lags.append(max(0.0, seen - at) * 1000)
    monitor.stopped.set()
    return lags, achieved


def check_served(cluster: BenchCluster, clients, names: list[str]) -> None:
    """Each replica answers each repository itself with the primary's tip."""
    for k, name in enumerate(names):
        tip = clients.git.run("-C", str(clients.trees[k]), "rev-parse", "HEAD").strip()
        for replica in cluster.replicas:
            node, oid = served_tip(
                f"{replica.url}/{name}.git/info/refs?service=git-upload-pack", b"refs/heads/main"
            )
            if (node, oid) != (replica.name, tip):
                raise SetupError(f"{replica.name} answered {name} with {oid} from {node!r}, not {tip}")
