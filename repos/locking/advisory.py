"""The PostgreSQL lock: a session advisory lock, `pg_try_advisory_lock(kind key, repository id)`,
on a connection of its own per held lock.

Every web and worker host sharing the database excludes the others, and a holder that dies
loses its locks with its connection: the server ends the session when the socket closes (at
once for a killed process; within about a minute for a vanished host, through the keepalives
set below). A connection of its own, because Django's connections are per thread, closed
between requests and reused: a lock on one would outlive or vanish under its holder.
"""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS, connection, connections

# application_name is how an operator (and RepositoryBusy) sees who holds a lock; PostgreSQL
# keeps NAMEDATALEN - 1 bytes of it.
NOTE_BYTES = 63


class AdvisoryLock:
    def __init__(self, key: tuple[int, int], note: str) -> None:
        self.key = key
        self.closed = False
        self.db = connections.create_connection(DEFAULT_DB_ALIAS)
        # Released from whichever thread ends the job (a Celery task's finally, a heartbeat).
        self.db.inc_thread_sharing()
        try:
            with self.db.cursor() as cursor:
                # Server-side keepalives, settable per session: a holder whose host vanished
                # (no FIN, no RST) is dropped in ~30 + 3 * 10 s instead of the kernel's 2 hours.
                cursor.execute(
                    "SELECT set_config('application_name', %s, false),"
                    " set_config('tcp_keepalives_idle', '30', false),"
                    " set_config('tcp_keepalives_interval', '10', false),"
                    " set_config('tcp_keepalives_count', '3', false)",
                    [note.encode()[:NOTE_BYTES].decode("utf-8", "ignore")],
                )
        except BaseException:
            self.close()
            raise

    def try_acquire(self) -> bool:
        with self.db.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", list(self.key))
            return bool(cursor.fetchone()[0])

    def release(self) -> None:
        # Unlock before closing: closing alone releases the lock only when the server's backend
        # has exited, a moment after the client returns, and in that moment the next claimant
        # (or is_claimed) still finds it held. If the unlock fails the connection is broken,
        # and closing it releases the lock as a dying holder's would.
        if not self.closed:
            try:
                with self.db.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", list(self.key))
            except Exception:  # noqa: S110 - closing below releases it anyway
                pass
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.db.close()
            finally:
                self.db.dec_thread_sharing()


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
