"""PostgreSQL's lock sessions are pooled per process (repos.locking.advisory): a session serves
lock after lock, is never lent to two holders at once (session locks are re-entrant), is not
reused across fork(), and one the server ended is replaced without the caller noticing."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from repos import locking
from repos.locking import advisory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("advisory locks: the suite runs on SQLite (DATABASE_URL=postgres://... tests them)")


def lock_session(held: locking.Claim) -> int:
    """The server pid of the session holding a claim."""
    lock = held._lock
    assert isinstance(lock, advisory.AdvisoryLock)
    with lock.db.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backends_named(name: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [name])
        return cursor.fetchone()[0]


def test_a_released_session_serves_the_next_lock_and_shows_idle():
    with locking.claim("bundles", 21, note="first") as held:
        first = lock_session(held)
        assert locking.holders("bundles", [21]) == {21: "first"}
    with locking.claim("maintenance", 22, note="second") as held:
        assert lock_session(held) == first
        assert locking.holders("maintenance", [22]) == {22: "second"}
    assert locking.holders("bundles", [21]) == {}
    assert backends_named(advisory.IDLE_NAME) >= 1


def test_two_holders_in_one_process_never_share_a_session():
    """Were they to share one, the second pg_try_advisory_lock would succeed (re-entrant)."""
    held = locking.claim("bundles", 23, note="holder")
    assert held is not None
    try:
        assert locking.claim("bundles", 23) is None
        results: list[object] = []
        thread = threading.Thread(target=lambda: results.append(locking.claim("bundles", 23)))
        thread.start()
        thread.join()
        assert results == [None]
        with locking.claim("bundles", 24) as other:
            assert lock_session(other) != lock_session(held)
    finally:
        held.release()
    with locking.claim("bundles", 23) as again:
        assert again is not None


def test_a_session_the_server_ended_is_replaced():
    with locking.claim("bundles", 25) as held:
        ended = lock_session(held)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [ended])
    with locking.claim("bundles", 25, note="after") as held:
        assert held is not None
        assert lock_session(held) != ended
        assert locking.holders("bundles", [25]) == {25: "after"}


def test_a_forked_child_opens_its_own_sessions():
    with locking.claim("bundles", 26) as held:
        parent = lock_session(held)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its session's pid, never touch the parent's
        code = 1
        try:
            claim = locking.claim("bundles", 27)
            if claim is not None:
                os.write(write, str(lock_session(claim)).encode())
                claim.release()
                code = 0
        finally:
            os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    child = int(os.read(read, 32) or b"0")
    os.close(read)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child not in (0, parent)
    # The parent's pooled session survived the child's exit and still serves.
    with locking.claim("bundles", 28) as held:
        assert lock_session(held) == parent
