"""Two real nodes for the routing tests: a primary and a replica web server (gunicorn, as
`make run` starts them) sharing the test database, each with its own REPO_ROOT.

The replication engine is not what these tests are about: `sync` stands in for it, copying
the primary's repository to the replica's disk (`git clone --mirror`, then fetches) and
writing the replica's ReplicaState, as the engine does once it holds a generation.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from repos import storage
from tests import live
from tests.gitutil import git

# Long enough that "behind but within the lag" does not depend on the test's speed; "beyond
# the lag" is made by dating the first missing change back.
MAX_LAG = 60
CSRF_FIELD = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Nodes:
    primary_url: str
    replica_url: str
    primary_root: Path
    replica_root: Path
    primary: live.ManagedProcess
    replica: live.ManagedProcess
    env: dict[str, str] = field(default_factory=dict)

    def replica_path(self, repo) -> Path:
        return self.replica_root / storage.shard_for(repo.pk) / f"{repo.pk}.git"

    def primary_path(self, repo) -> Path:
        return self.primary_root / storage.shard_for(repo.pk) / f"{repo.pk}.git"


def start_nodes(live_env: dict[str, str], tmp_path_factory, **replica_settings: str) -> Nodes:
    primary_port, replica_port = live.free_port(), live.free_port()
    primary_url = f"http://127.0.0.1:{primary_port}"
    replica_root = tmp_path_factory.mktemp("replica-repos")
    primary_env = {**live_env, "HOSTSITE_ROLE": "primary", "HOSTSITE_NODE": "p1"}
    replica_env = {
        **live_env,
        "HOSTSITE_ROLE": "replica",
        "HOSTSITE_NODE": "r1",
        "PRIMARY_URL": primary_url,
        "REPO_ROOT": str(replica_root),
        # Its own caches, as a replica on its own machine has.
        "VAR_DIR": str(tmp_path_factory.mktemp("replica-var")),
        "REPLICA_MAX_LAG_SECONDS": str(MAX_LAG),
        **replica_settings,
    }
    primary = live.start_web(primary_env, primary_port, tmp_path_factory.mktemp("primary-logs"))
    try:
        replica = live.start_web(replica_env, replica_port, tmp_path_factory.mktemp("replica-logs"))
    except Exception:
        primary.stop()
        raise
    return Nodes(
        primary_url=primary_url,
        replica_url=f"http://127.0.0.1:{replica_port}",
        primary_root=Path(live_env["REPO_ROOT"]),
        replica_root=replica_root,
        primary=primary,
        replica=replica,
        env=replica_env,
    )


def running_nodes(live_env, tmp_path_factory, **replica_settings: str) -> Iterator[Nodes]:
    """For a test module's own fixture (`yield from`): each module gets its pair of nodes."""
    nodes = start_nodes(live_env, tmp_path_factory, **replica_settings)
    try:
        yield nodes
    finally:
        nodes.replica.stop()
        nodes.primary.stop()


def sync(nodes: Nodes, repo) -> int:
    """What the replication engine does: the replica's copy brought to the generation read
    first (read, then fetch: the copy holds at least that), and its ReplicaState written."""
    from replication.models import Node, ReplicaState

    repo.refresh_from_db()
    generation = repo.generation
    source, target = nodes.primary_path(repo), nodes.replica_path(repo)
    env = {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(nodes.replica_root)}
    if target.exists():
        git(env, "--git-dir", str(target), "fetch", "--quiet", "--prune", str(source), "+refs/*:refs/*")
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        git(env, "clone", "--quiet", "--mirror", str(source), str(target))
    node, created = Node.objects.get_or_create(name="r1", defaults={"role": "replica"})
    if created:
        # The primary's processes learn of a new replica within their cache's second.
        from replication.nodes import LIVE_CACHE_SECONDS

        time.sleep(LIVE_CACHE_SECONDS + 0.1)
    ReplicaState.objects.update_or_create(
        node=node, repository=repo, defaults={"generation": generation, "synced_at": timezone.now()}
    )
    return generation


def age_changes(repo, seconds: int) -> None:
    """Date the repository's log back: the replica's copy is as far behind as that."""
    from datetime import timedelta

    from repos.models import RepositoryChange

    RepositoryChange.objects.filter(repository_id=repo.pk).update(
        created_at=timezone.now() - timedelta(seconds=seconds)
    )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the test looks at each answer, who gave it, and where it points


class Browser:
    """A cookie-keeping client that posts forms as a browser does (CSRF token and Referer),
    and never follows redirects or goes through a proxy."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect()
        )

    def login_as(self, user) -> None:
        """A signed-in session, as the login form makes one (the session table is shared)."""
        from django.conf import settings
        from django.test import Client

        client = Client()
        client.force_login(user)
        value = client.cookies[settings.SESSION_COOKIE_NAME].value
        host = urllib.parse.urlsplit(self.base).hostname or ""
        self.jar.set_cookie(_cookie(settings.SESSION_COOKIE_NAME, value, host))

    def request(self, method: str, path: str, data=None, headers=None, form: str | None = None):
        """(status, body, headers). `form`: the page to take the CSRF token from first."""
        headers = dict(headers or {})
        body = None
        if isinstance(data, dict):
            token = ""
            if form is not None:
                found = CSRF_FIELD.search(self.request("GET", form)[1])
                token = found[1] if found else ""
            body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            headers.setdefault("Referer", self.base + (form or path))
        elif isinstance(data, bytes | str):
            body = data.encode() if isinstance(data, str) else data
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=headers)
        try:
            with self.opener.open(req, timeout=60) as resp:
                return resp.status, resp.read().decode(errors="replace"), resp.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace"), exc.headers


def _cookie(name: str, value: str, host: str) -> http.cookiejar.Cookie:
    return http.cookiejar.Cookie(
        0, name, value, None, False, host, False, False, "/", True, False, None, False, None, None, {}
    )
