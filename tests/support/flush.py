"""A transactional test's flush on PostgreSQL by DELETE, not Django's TRUNCATE.

TRUNCATE gives every table (and index) a new file and takes an exclusive lock on each: 0.14 s
for this schema's 57 tables on an idle machine, after each of the suite's hundreds of live
tests. DELETE of the few rows a test leaves took 0.01 s. Every foreign key here is DEFERRABLE
INITIALLY DEFERRED (Django's own; test_flush.py checks), and Django runs the flush in one
transaction, so the order of the tables does not matter. A flush that resets sequences keeps
Django's statement.

The tables are locked against writers first, as TRUNCATE locked them: a process the test left
running (a worker's last task, a replica's catch-up sweep, a server's request) that inserts a
row referring to a row the flush deletes would otherwise commit between the DELETEs and the
flush's COMMIT, whose deferred check then refuses the whole flush. The lock is EXCLUSIVE, which
lets plain reads through but not SELECT ... FOR UPDATE: a writer that locked a row that way
(Django's update_or_create does) and then wrote it would deadlock with a flush deleting that
row. Locked out, such a writer waits and then meets the missing rows itself.

A writer already inside a transaction can still hold one table the flush wants while waiting
for another the flush holds (the lock takes the tables one by one): PostgreSQL then ends one
of the two transactions as a deadlock. When it ends the flush's, nothing was deleted, and the
flush runs again, as PostgreSQL's documentation advises for a transaction a deadlock ended.
"""

from __future__ import annotations

from django.db import OperationalError
from django.db.backends.postgresql.operations import DatabaseOperations

_truncating_flush = DatabaseOperations.sql_flush
_execute_flush = DatabaseOperations.execute_sql_flush
# A deadlock needs a writer in the middle of a transaction; a few tries outlast any of them.
DEADLOCK_TRIES = 5
DEADLOCK_DETECTED = "40P01"  # PostgreSQL's SQLSTATE


def _deleting_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    if reset_sequences or not tables:
        return _truncating_flush(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    names = ", ".join(style.SQL_FIELD(self.quote_name(table)) for table in tables)
    lock = f"{style.SQL_KEYWORD('LOCK TABLE')} {names} {style.SQL_KEYWORD('IN EXCLUSIVE MODE')};"
    return ["SET CONSTRAINTS ALL DEFERRED;", lock] + [
        f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables
    ]


def _flush_again_after_deadlock(self, sql_list) -> None:
    for attempt in range(1, DEADLOCK_TRIES + 1):
        try:
            _execute_flush(self, sql_list)
            return
        except OperationalError as error:
            if attempt == DEADLOCK_TRIES or getattr(error.__cause__, "sqlstate", None) != DEADLOCK_DETECTED:
                raise


def install() -> None:
    DatabaseOperations.sql_flush = _deleting_flush  # type: ignore[method-assign]
    DatabaseOperations.execute_sql_flush = _flush_again_after_deadlock  # type: ignore[method-assign]
