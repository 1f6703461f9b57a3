"""The PostgreSQL lock: a session advisory lock, `pg_try_advisory_lock(kind key, repository id)`,
on a session (connection) lent to that one lock while it is held.

Every web and worker host sharing the database excludes the others, and a holder that dies
loses its locks with its connection: the server ends the session when the socket closes (at
once for a killed process; within about a minute for a vanished host, through the keepalives
set below). Not Django's connection, because Django's connections are per thread, closed
between requests and reused: a lock on one would outlive or vanish under its holder. Sessions
are kept between locks in a small per-process pool, each lent to one lock at a time.

Not django-pglocks nor django-pgware, which replaces it: both `advisory_lock`s take the lock
on Django's connection of the calling thread (`connections[using].cursor()`), the connection
ruled out above, and have no way to name the holder (here: the session's application_name)
nor to list who holds what.
"""

from __future__ import annotations

import os
import threading
import time

from django.db import DEFAULT_DB_ALIAS, Error, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper

# application_name is how an operator (and RepositoryBusy) sees who holds a lock; PostgreSQL
# keeps NAMEDATALEN - 1 bytes of it.
NOTE_BYTES = 63
IDLE_NAME = "hostsite lock (idle)"
# Sessions kept open between locks, per process: opening one costs the server a backend
# process and the client a handshake, several milliseconds each, and a push took a dozen
# locks across the site's workers. An idle session older than this is closed when next seen.
POOL_SIZE = 4
POOL_MAX_IDLE_SECONDS = 60.0


class _Pool:
    """This process's idle lock sessions. A session is lent to one lock at a time: session
    advisory locks are re-entrant, so two holders sharing one would both get the lock."""

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.idle: list[tuple[BaseDatabaseWrapper, float]] = []
        # Sessions inherited across fork(): the parent's sockets. Kept referenced and never
        # closed here, because closing (even by the garbage collector) would end the parent's.
        self.inherited: list[BaseDatabaseWrapper] = []

    def take(self) -> BaseDatabaseWrapper | None:
        now = time.monotonic()
        with self.mutex:
            while self.idle:
                db, since = self.idle.pop()
                if now - since <= POOL_MAX_IDLE_SECONDS:
                    return db
                _close(db)
        return None

    def give_back(self, db: BaseDatabaseWrapper) -> None:
        with self.mutex:
            if len(self.idle) < POOL_SIZE:
                self.idle.append((db, time.monotonic()))
                return
        _close(db)

    def close_idle(self) -> None:
        with self.mutex:
            idle, self.idle = self.idle, []
        for db, _ in idle:
            _close(db)

    def after_fork(self) -> None:
        self.mutex = threading.Lock()
        self.inherited.extend(db for db, _ in self.idle)
        self.idle = []


_pool = _Pool()
os.register_at_fork(after_in_child=_pool.after_fork)


def close_idle_sessions() -> None:
    """Close this process's idle lock sessions (before dropping a database, say)."""
    _pool.close_idle()


def _new_session(note: str) -> BaseDatabaseWrapper:
    db = connections.create_connection(DEFAULT_DB_ALIAS)
    # Released from whichever thread ends the job (a Celery task's finally, a heartbeat).
    db.inc_thread_sharing()
    try:
        with db.cursor() as cursor:
            # Server-side keepalives, settable per session: a holder whose host vanished
            # (no FIN, no RST) is dropped in ~30 + 3 * 10 s instead of the kernel's 2 hours.
            cursor.execute(
                "SELECT set_config('tcp_keepalives_idle', '30', false),"
                " set_config('tcp_keepalives_interval', '10', false),"
                " set_config('tcp_keepalives_count', '3', false),"
                " set_config('application_name', %s, false)",
                [_truncated(note)],
            )
    except BaseException:
        _close(db)
        raise
    return db


def _close(db: BaseDatabaseWrapper) -> None:
    try:
        db.close()
    except Error:
        pass  # a broken session: the server has ended it already
    finally:
        db.dec_thread_sharing()


def _truncated(note: str) -> str:
    return note.encode()[:NOTE_BYTES].decode("utf-8", "ignore")


def _named(db: BaseDatabaseWrapper, note: str) -> None:
    with db.cursor() as cursor:
        cursor.execute("SELECT set_config('application_name', %s, false)", [_truncated(note)])


class AdvisoryLock:
    def __init__(self, key: tuple[int, int], note: str) -> None:
        self.key = key
        self.closed = False
        pooled = _pool.take()
        if pooled is not None:
            try:
                _named(pooled, note)  # also tells a live session from one the server ended
                self.db = pooled
                return
            except Error:
                _close(pooled)
        self.db = _new_session(note)

    def try_acquire(self) -> bool:
        with self.db.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", list(self.key))
            return bool(cursor.fetchone()[0])

    def release(self) -> None:
        # Unlock before the session goes back to the pool (or closes): closing alone releases
        # the lock only when the server's backend has exited, a moment after the client
        # returns, and in that moment the next claimant (or is_claimed) still finds it held.
        # If the unlock fails the session is broken, and closing it releases the lock as a
        # dying holder's would.
        if self.closed:
            return
        try:
            with self.db.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_unlock(%s, %s), set_config('application_name', %s, false)",
                    [*self.key, IDLE_NAME],
                )
                unlocked = bool(cursor.fetchone()[0])
        except Exception:
            unlocked = False
        if unlocked:
            self._return()
        else:
            self.close()

    def close(self) -> None:
        """End the session (an error, or a failed unlock): the server drops whatever it held."""
        if self.closed:
            return
        self.closed = True
        _close(self.db)

    def give_up(self) -> None:
        """Done waiting, lock not acquired: the session holds nothing and goes back to the pool."""
        if not self.closed:
            try:
                _named(self.db, IDLE_NAME)
            except Error:
                self.close()
                return
            self._return()

    def _return(self) -> None:
        self.closed = True
        _pool.give_back(self.db)


def holders(keys: dict[int, tuple[int, int]]) -> dict[int, str]:
    """repository id -> the holder's application_name, for the ids in `keys` whose lock is held
    now. pg_locks shows the two int4 keys as unsigned oids (classid, objid) with objsubid 2."""
    if not keys:
        return {}
    by_objid = {objid & 0xFFFFFFFF: repo_id for repo_id, (_, objid) in keys.items()}
    (classid,) = {classid & 0xFFFFFFFF for classid, _ in keys.values()}
    with connection.cursor() as cursor:
        # pg_stat_activity is read once per transaction unless told otherwise; pg_locks is live.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT l.objid::bigint, coalesce(a.application_name, '')"
            " FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND l.classid::bigint = %s AND l.objid::bigint = ANY(%s::bigint[])",
            [classid, list(by_objid)],
        )
        return {by_objid[objid]: name for objid, name in cursor.fetchall()}
