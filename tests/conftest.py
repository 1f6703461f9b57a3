from __future__ import annotations

import gc
import os
import time
import uuid
from pathlib import Path

import pytest

from tests import live
from tests.factories import RepositoryFactory, UserFactory  # noqa: F401 - fixtures below use them
from tests.support import flush

flush.install()

# Rate limits (repos.ratelimits) stay on in every test, at a rate no test reaches: the suite's
# servers see every test's requests from one address. The tests of the limits set their own
# (tests/repos/test_ratelimits_*.py).
UNREACHED_RATE = "1000000/h"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """Under pytest-xdist (`make test` runs several workers) each worker process starts with a
    VAR_DIR of its own, set before it imports the settings, which read VAR_DIR once. Their
    databases are apart already (pytest-django suffixes the test database per worker), as are
    their REPO_ROOTs and Celery queues (per session, below), but VAR_DIR holds what is keyed by
    database ids, which the workers' databases hand out alike: the file cache (showwork's
    per-repository version tokens), workspace exports (`exports/<repository id>`). The processes
    the live fixtures start inherit it, so a worker and its servers agree."""
    from django.conf import settings

    for spec in specs:
        var_dir = Path(settings.VAR_DIR) / "xdist" / spec.id
        var_dir.mkdir(parents=True, exist_ok=True)
        spec.env["VAR_DIR"] = str(var_dir)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and then, before it drops the test database: no session may be left on
    it, or PostgreSQL refuses the drop. This process's pooled lock sessions
    (repos.locking.advisory) are closed, the connections of test threads that ended are
    collected, and whatever is left (a straggler of a child process) is ended."""
    yield
    from django.db import connection

    from repos.locking.advisory import close_idle_sessions

    close_idle_sessions()
    gc.collect()
    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(scope="session", autouse=True)
def _isolated_storage(tmp_path_factory):
    """Every test session gets its own REPO_ROOT and Celery queue, shared with the processes
    the live fixtures start, so runs never see each other's repositories or messages."""
    from django.conf import settings

    from hostsite.celery import app

    root = tmp_path_factory.mktemp("repos")
    settings.REPO_ROOT = root
    bundle_root = tmp_path_factory.mktemp("bundles")
    settings.BUNDLE_STORAGE_URL = f"file://{bundle_root}"
    settings.BUNDLE_STORAGE = {"backend": "file", "path": str(bundle_root)}
    # Spooled pushes name repository ids of this session's database: never replayed elsewhere.
    settings.PUSH_SPOOL_DIR = tmp_path_factory.mktemp("push-spool")
    queue = f"test-{uuid.uuid4().hex[:12]}"
    app.conf.task_default_queue = queue
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    yield {"repo_root": root, "queue": queue, "bundle_root": bundle_root}
    # Messages no worker consumed must not outlive the session (Redis is shared).
    live.empty_queues(queue, delete=True)


@pytest.fixture(autouse=True)
def _rate_limits_per_test(settings):
    """In this process, each test counts afresh under a prefix of its own, at unreached rates."""
    settings.RATELIMIT_CACHE_PREFIX = f"rl:{uuid.uuid4().hex}:"
    settings.RATE_LIMITS = dict.fromkeys(settings.RATE_LIMITS, (1_000_000, 3600))


@pytest.fixture(autouse=True)
def _no_cached_replicas():
    """The live-replica answer is cached for a second per process (replication.nodes): one a
    test's cluster left must not send the next test's changes to nodes that are gone."""
    from replication import nodes

    nodes.forget_live_replicas()
    yield
    nodes.forget_live_replicas()


@pytest.fixture(autouse=True)
def _repo_root_per_test(request, tmp_path, _isolated_storage):
    """Tests that do not talk to live processes get a REPO_ROOT of their own: rolled-back test
    transactions hand the same ids out again, and their repositories must not meet."""
    from django.conf import settings

    if "live_env" in request.fixturenames:
        yield _isolated_storage["repo_root"]
        return
    settings.REPO_ROOT = tmp_path / "repo-root"
    yield settings.REPO_ROOT
    settings.REPO_ROOT = _isolated_storage["repo_root"]


@pytest.fixture(scope="session")
def live_env(django_db_setup, django_db_blocker, _isolated_storage, tmp_path_factory) -> dict[str, str]:
    """Environment for child processes: the test database, the session's REPO_ROOT and queue."""
    from django.conf import settings
    from django.db import connection

    from hostsite.ratelimit_settings import RATE_LIMIT_VARIABLES

    with django_db_blocker.unblock():
        url = live.database_url(connection.settings_dict)
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": url,
            "REPO_ROOT": str(_isolated_storage["repo_root"]),
            "BUNDLE_STORAGE_URL": f"file://{_isolated_storage['bundle_root']}",
            "S3_ENDPOINT_URL": "",
            "PUSH_SPOOL_DIR": str(settings.PUSH_SPOOL_DIR),
            "CELERY_QUEUE": _isolated_storage["queue"],
            "PYTHONUNBUFFERED": "1",
            # Low, so a test can see maintenance follow pushes.
            "MAINTENANCE_PUSH_THRESHOLD": "3",
            # Webhook tests run a receiver on loopback and watch retries happen quickly.
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "1",
            "WEBHOOK_RETRY_BASE_SECONDS": "1",
            # Import and mirror tests fetch from the live server on loopback; the SSRF guard
            # itself is tested in-process with the setting off.
            "IMPORT_ALLOW_PRIVATE_SOURCES": "1",
            # The image proxy's browser test serves its "external" images from loopback.
            "IMAGE_PROXY_ALLOW_NETWORKS": "127.0.0.1/32",
            "MIRROR_MIN_INTERVAL_MINUTES": "1",
            # Progress rows often enough that a test sees an import of seconds move.
            "IMPORT_PROGRESS_INTERVAL_MS": "100",
        }
    )
    env.update({variable: UNREACHED_RATE for variable, _default in RATE_LIMIT_VARIABLES.values()})
    return env


@pytest.fixture(scope="session")
def live_web(live_env, tmp_path_factory):
    """The real web server (gunicorn, as `make run` starts it) on a free loopback port."""
    port = live.free_port()
    web = live.start_web(live_env, port, tmp_path_factory.mktemp("web-logs"))
    web.url = f"http://127.0.0.1:{port}"
    yield web
    web.stop()


@pytest.fixture(scope="session")
def live_server_url(live_web) -> str:
    return live_web.url


@pytest.fixture(scope="module")
def _module_worker(live_env, _isolated_storage, tmp_path_factory):
    """The module's real Celery worker (tests.support.workers), started when a test first asks."""
    from tests.support.workers import WorkerLender

    lender = WorkerLender(live_env, _isolated_storage["queue"], tmp_path_factory.mktemp("worker-logs"))
    yield lender
    lender.stop()


@pytest.fixture
def celery_worker_process(_module_worker):
    """A real Celery worker consuming the session's queue through the real broker, for this
    test only: the queue is emptied first, and at the end the worker stops consuming and
    finishes what it took before the test's database is flushed (tests.support.workers)."""
    lent = _module_worker.lend()
    yield lent
    _module_worker.take_back()


@pytest.fixture(autouse=True)
def _database_quiet_before_flush(request):
    """A transactional test ends with a flush (tests.support.flush), which must not race a live
    server or worker still finishing what the test started (a push's post-response work, a
    task) and writing rows after it: wait until no other session of the test database is busy
    before it runs."""
    marker = request.node.get_closest_marker("django_db")
    if marker is None or not marker.kwargs.get("transaction"):
        yield
        return
    # Set up after the database fixture, so torn down (below) before its flush.
    request.getfixturevalue("transactional_db")
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + 20
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.1)


@pytest.fixture
def git_home(tmp_path) -> dict[str, str]:
    """An environment for client-side git with a pinned HOME and no global/system config."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "PATH": os.environ["PATH"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.invalid",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.invalid",
        "GIT_TERMINAL_PROMPT": "0",
    }


@pytest.fixture
def source_repo(tmp_path, git_home) -> Path:
    """A small non-bare repository with two branches and an annotated tag."""
    from tests.gitutil import make_history

    path = tmp_path / "source"
    make_history(path, git_home)
    return path


def pytest_sessionfinish(session, exitstatus):
    # pytest-django removes the test database; drop stray SQLite WAL files next to it too.
    from django.conf import settings

    # Under xdist the name carries the worker's suffix (test-<pid>.sqlite3_gw0).
    for p in Path(settings.VAR_DIR).glob(f"test-{os.getpid()}.sqlite3*"):
        if p.name.endswith(("-wal", "-shm")):
            p.unlink(missing_ok=True)


@pytest.fixture
def world(live_server_url, tmp_path, git_home):
    """A public repository owner/project on the live server, seeded with one pushed commit;
    world.add(name, role) brings in more users with clones of it."""
    from tests.pushers import World

    return World(live_server_url, tmp_path, git_home)


# Fixtures that start the real web server or a Celery worker; `make test-fast` deselects the
# tests that use them (-m "not live") without each test file having to remember the marker.
LIVE_FIXTURES = frozenset({"live_web", "live_server_url", "celery_worker_process"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.live)
