"""The per-repository lock, across real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from repos.locking import RepositoryBusy, lock_path, repository_lock

HOLD = """
import os, sys, time, django
os.environ["DJANGO_SETTINGS_MODULE"] = "hostsite.settings"
django.setup()
from repos.locking import repository_lock
with repository_lock(7, purpose="holder"):
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
"""


def hold(seconds: float, env) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(seconds)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def child_env(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return {**os.environ, "VAR_DIR": str(tmp_path), "SECRET_KEY": "x"}


def test_second_holder_waits_then_gets_it(child_env):
    proc = hold(0.5, child_env)
    start = time.monotonic()
    with repository_lock(7, purpose="merge", timeout=10):
        waited = time.monotonic() - start
    proc.wait()
    assert 0.2 < waited < 5


def test_busy_names_the_holder_and_other_repositories_are_free(child_env):
    proc = hold(30, child_env)
    try:
        with pytest.raises(RepositoryBusy, match="holder"), repository_lock(7, purpose="merge", timeout=0.2):
            pass
        with repository_lock(8, purpose="merge", timeout=0.2):
            pass
    finally:
        proc.kill()
        proc.wait()
    # A killed holder's lock is released by the kernel.
    with repository_lock(7, purpose="merge", timeout=2):
        assert "merge" in lock_path(7).read_text()


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
