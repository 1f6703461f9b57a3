"""A replica in the test's own process: settings.REPO_ROOT pointed at a directory of its own,
HOSTSITE_ROLE=replica and PRIMARY_URL the live server (the primary), while it syncs; the test
process is the primary again outside (it writes the session's REPO_ROOT, as the live server
does)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from django.db import transaction
from django.test import override_settings

from replication import nodes, sync
from replication.models import Node
from repos import changelog
from repos.storage import repository_path


class Replica:
    def __init__(self, name: str, root: Path, primary_url: str):
        self.name = name
        self.root = root
        self.primary_url = primary_url
        root.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def active(self, primary_url: str | None = None) -> Iterator[None]:
        with override_settings(
            HOSTSITE_ROLE="replica",
            HOSTSITE_NODE=self.name,
            PRIMARY_URL=primary_url or self.primary_url,
            REPO_ROOT=self.root,
        ):
            yield

    def register(self) -> Node:
        with self.active():
            node = nodes.this_node(starting=True)
            nodes.check_disk(node)
        nodes.forget_live_replicas()
        return node

    def sync(
        self, repo_id: int, generation: int | None = None, *, primary_url: str | None = None, **kw
    ) -> str:
        if generation is None:
            generation = changelog.current_generation(repo_id)
        with self.active(primary_url):
            return sync.sync_repository(repo_id, generation, **kw)

    def path(self, repo_id: int) -> Path:
        with self.active():
            return repository_path(repo_id)

    def refs(self, repo_id: int) -> dict[str, str]:
        return refs(self.path(repo_id))

    def has(self, repo_id: int, oid: str) -> bool:
        return has(self.path(repo_id), oid)


def _git(path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "--git-dir", str(path), *args], capture_output=True, text=True, check=check, timeout=120
    )


def refs(path: Path) -> dict[str, str]:
    out = _git(path, "for-each-ref", "--format=%(refname) %(objectname)").stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def has(path: Path, oid: str) -> bool:
    return _git(path, "cat-file", "-e", oid, check=False).returncode == 0


def fsck(path: Path) -> str:
    result = _git(path, "fsck", "--no-dangling", "--no-progress", check=False)
    assert result.returncode == 0, result.stderr + result.stdout
    return result.stdout + result.stderr


def record(repo_id: int, kind: str = "reconcile", **kwargs):
    with transaction.atomic():
        return changelog.record(repo_id, kind, **kwargs)
