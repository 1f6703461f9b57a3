"""The per-repository lock, across real processes, on whichever database the suite runs on
(PostgreSQL: advisory locks; SQLite: flock under VAR_DIR)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection

from repos import locking
from repos.locking import RepositoryBusy, repository_lock
from tests import live

pytestmark = pytest.mark.django_db

# Runs `code` (which takes a lock and leaves it held), says so, then sleeps until killed.
HOLD = """
import os, sys, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "hostsite.settings"
django.setup()
exec(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@contextlib.contextmanager
def holding(env: dict[str, str], code: str, seconds: float = 60) -> Iterator[subprocess.Popen]:
    """A second python process holding a lock while the block runs; SIGKILLed after it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, code, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=live.BASE_DIR,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()


def process_env(var_dir) -> dict[str, str]:
    """A child's environment: this test's database (its locks are per database) and VAR_DIR."""
    return {
        **os.environ,
        "VAR_DIR": str(var_dir),
        "SECRET_KEY": "x",
        "DATABASE_URL": live.database_url(connection.settings_dict),
    }


@pytest.fixture
def child_env(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return process_env(tmp_path)


# Kept in a global: a context manager collected after __enter__ would release at once.
HOLD_7 = (
    "from repos.locking import repository_lock\nheld = repository_lock(7, purpose='holder')\nheld.__enter__()"
)


def test_second_holder_waits_then_gets_it(child_env):
    with holding(child_env, HOLD_7, seconds=0.5) as proc:
        start = time.monotonic()
        with repository_lock(7, purpose="merge", timeout=10):
            waited = time.monotonic() - start
        proc.wait()
    assert 0.2 < waited < 5


def test_busy_names_the_holder_and_other_repositories_are_free(child_env):
    with holding(child_env, HOLD_7):
        with pytest.raises(RepositoryBusy, match="holder"), repository_lock(7, purpose="merge", timeout=0.2):
            pass
        with repository_lock(8, purpose="merge", timeout=0.2):
            pass
        # A long job's claim on the same repository is another lock.
        with locking.claim("maintenance", 7) as held:
            assert held is not None
    # The holder was killed with SIGKILL: the lock went with it.
    with repository_lock(7, purpose="merge", timeout=5):
        assert locking.holders("repository", [7]) == {7: f"merge (pid {os.getpid()})"}
    assert not locking.is_claimed("repository", 7)


def test_threads_of_one_process_exclude_each_other(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    inside, overlaps = [], []

    def work():
        with repository_lock(3, purpose="t", timeout=10):
            if inside:
                overlaps.append(1)
            inside.append(1)
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []


def test_the_database_picks_the_implementation(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    postgres = connection.vendor == "postgresql"
    assert locking.uses_advisory_locks() is postgres
    with repository_lock(5, purpose="merge"):
        path = locking.lock_path(5)
        if postgres:
            assert not path.exists()  # nothing on disk: the lock lives in the database
        else:
            assert path.parent.parent == tmp_path / "locks"
            assert path.read_text() == f"merge (pid {os.getpid()})\n"
