"""Claims for long jobs (repos.locking.claim): exclusive across processes and threads, per
kind and repository, and gone with a holder killed by SIGKILL, on either database."""

from __future__ import annotations

import os
import zlib

import pytest
from django.db import connection

from repos import locking
from tests.repos.test_locking import holding, process_env
from tests.support.wait import wait_until

pytestmark = pytest.mark.django_db

HOLD_BUNDLES_7 = "from repos import locking\nheld = locking.claim('bundles', 7, note='builder')\nassert held"


@pytest.fixture
def child_env(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return process_env(tmp_path)


def claim_within(kind: str, repo_id: int, seconds: float = 10.0) -> locking.Claim:
    """The claim, once free: a killed holder's PostgreSQL session ends a moment after it."""
    return wait_until(lambda: locking.claim(kind, repo_id), timeout=seconds, what=f"{kind} {repo_id} free")


def test_a_claim_excludes_other_processes_and_dies_with_its_holder(child_env):
    with holding(child_env, HOLD_BUNDLES_7):
        assert locking.claim("bundles", 7) is None
        assert locking.is_claimed("bundles", 7)
        assert locking.holders("bundles", [7, 8]) == {7: "builder"}
        # Other repositories and other kinds are other locks.
        for kind, repo_id in (("bundles", 8), ("maintenance", 7), ("repository", 7)):
            with locking.claim(kind, repo_id) as held:
                assert held is not None
    # SIGKILLed: nothing ran to release the claim, and the next one gets it.
    with claim_within("bundles", 7):
        assert locking.holders("bundles", [7]) == {7: f"bundles (pid {os.getpid()})"}
    assert not locking.is_claimed("bundles", 7)
    assert locking.holders("bundles", [7]) == {}


def test_claims_of_one_process_exclude_each_other_until_released(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    first = locking.claim("maintenance", 3)
    assert first is not None
    assert locking.claim("maintenance", 3) is None
    first.release()
    first.release()  # once only: a second release does nothing
    with locking.claim("maintenance", 3) as again:
        assert again is not None and locking.is_claimed("maintenance", 3)
    assert not locking.is_claimed("maintenance", 3)


def test_keys_are_stable_int4_pairs():
    kind_key = zlib.crc32(b"bundles")
    assert locking.lock_key("bundles", 7) == (kind_key - (1 << 32) if kind_key >= 1 << 31 else kind_key, 7)
    assert locking.lock_key("bundles", 2**31)[1] == -(2**31)
    assert locking.lock_key("maintenance", 7) != locking.lock_key("bundles", 7)
    for bad in ("", "Bundles", "../x", "a" * 41):
        with pytest.raises(ValueError):
            locking.claim(bad, 1)


@pytest.mark.django_db(transaction=True)  # closes Django's connection: outside a test transaction
def test_an_advisory_lock_has_a_session_of_its_own():
    """Django's own connection comes and goes with requests; a lock on it would too."""
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks: the suite runs on SQLite (DATABASE_URL=postgres://... tests them)")
    with locking.claim("bundles", 9, note="mine") as held:
        assert held is not None
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
            )
            assert cursor.fetchone()[0] == 0
        connection.close()
        assert locking.holders("bundles", [9]) == {9: "mine"}
    assert not locking.is_claimed("bundles", 9)
