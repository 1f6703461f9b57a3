"""bench.replication's decomposition of the primary's CPU: what one replica's fetch of one push
costs the primary, measured alone.

The replicas are stopped; the bench fetches each new push into copies of its own exactly as a
replica does (replication.sync: the internal endpoint, its bearer token, protocol v0,
`--atomic --prune +refs/*:refs/*`), and reads the CPU of the primary's web server tree (git
children included once reaped) around each fetch. Nothing else runs on the primary then but
the push's own post-push tasks, in its worker tree, which is not read.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from bench.harness import manage, med
from bench.harness.cpu import tree_cpu
from bench.replication_nodes import BenchCluster

SIGN_CODE = "from replication.internal import fetch_token; print(fetch_token('bench-fetch'))"


def fetch_cost(cluster: BenchCluster, push, repo_ids: list[int], tmp: Path, pushes: int) -> float | None:
    """Median CPU seconds of the primary's web server tree per fetch of one new push.
    `push(i)` pushes a new commit to repository i."""
    primary = cluster.primary
    assert primary.web is not None
    token = manage(primary.env, "shell", "-c", SIGN_CODE).strip().splitlines()[-1]
    env = {
        **os.environ,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Bearer {token}",
    }
    copies = []
    for repo_id in repo_ids:
        copy = tmp / f"fetch-copy-{repo_id}.git"
        subprocess.run(["git", "init", "-q", "--bare", str(copy)], check=True)
        copies.append((copy, f"{primary.url}/_replication/{repo_id}.git"))

    def fetch(i: int) -> None:
        copy, url = copies[i]
        subprocess.run(
            [
                *("git", "-C", str(copy), "-c", "protocol.version=0", "fetch", "--atomic", "--prune"),
                *("--no-tags", "--quiet", "--no-write-fetch-head", url, "+refs/*:refs/*"),
            ],
            check=True,
            env=env,
            timeout=120,
        )

    for i in range(len(copies)):
        fetch(i)
    costs = []
    for n in range(pushes):
        i = n % len(copies)
        push(i)
        time.sleep(0.3)  # the push's request has ended
        before = tree_cpu(primary.web.pid)
        fetch(i)
        costs.append(tree_cpu(primary.web.pid) - before)
    return med(costs)
