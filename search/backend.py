"""Run a search for one viewer: pick the engine by database vendor, join every statement with
the repositories the viewer may read, and filter what the viewer's View hides (proposals of
hidden workspaces, commits only hidden refs reach) from the rows found.

    backend.count("code", query, user)            -> int (at most COUNT_CAP)
    backend.find("code", query, user, 0, 20)      -> list of hits (search.results)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import monotonic

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q

from repos.selectors import visible_repositories
from search import results
from search.engines import Engine, Statement, Visible
from search.engines.postgres import PostgresEngine
from search.engines.sqlite import SqliteEngine
from search.query import KINDS, Query, QueryError, check_for
from workspaces.models import Workspace

COUNT_CAP = 1000


def engine() -> Engine:
    if connection.vendor == "postgresql":
        return PostgresEngine()
    if connection.vendor == "sqlite":
        return SqliteEngine()
    raise QueryError(f"Search does not support the {connection.vendor} database.")


def visible_scope(user) -> Visible:
    """The SQL (and parameters) of the ids of the repositories `user` may read: the same
    queryset every list of the site uses, compiled, never copied."""
    sql, params = visible_repositories(user).order_by().values("id").query.sql_with_params()
    return Visible(sql, tuple(params))


def _statement(kind: str, query: Query, user) -> Statement:
    if kind not in KINDS:
        raise QueryError(f"Search one of: {', '.join(KINDS)}.")
    chosen = engine()
    check_for(kind, query, vendor=chosen.vendor)
    return getattr(chosen, kind)(query, visible_scope(user))


def count(kind: str, query: Query, user) -> int:
    statement = _statement(kind, query, user)
    sql, params = statement.count_sql(COUNT_CAP)
    with _deadline(statement) as cursor:
        cursor.execute(sql, params)
        total = int(cursor.fetchone()[0])
    if total and kind in FILTERED_AFTER:
        total -= _hidden_matches(kind, statement, query, user)
    return total


# Kinds whose rows the viewer's View may still hide in a readable repository.
FILTERED_AFTER = ("commits", "proposals")


def _hidden_matches(kind: str, statement: Statement, query: Query, user) -> int:
    """How many matches the View hides, so a count never tells of hidden content. Only
    repositories with hidden or taken-down workspaces can hide any: few, and looked at alone."""
    moderated = sorted(
        set(
            Workspace.objects.filter(Q(hidden=True) | Q(taken_down=True)).values_list(
                "repository_id", flat=True
            )
        )
    )
    if not moderated:
        return 0
    sql, params = statement.within(moderated).ids_sql(0, COUNT_CAP)
    with _deadline(statement) as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    return len(ids) - len(results.build(kind, ids, query, user))


def find(kind: str, query: Query, user, offset: int, limit: int) -> list:
    statement = _statement(kind, query, user)
    sql, params = statement.ids_sql(offset, limit)
    with _deadline(statement) as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    return results.build(kind, ids, query, user)


def timeout_seconds() -> float:
    return float(settings.SITE_SEARCH_TIMEOUT)


@contextmanager
def _deadline(statement: Statement) -> Iterator:
    """A cursor whose statements stop after timeout_seconds() (a regular expression that is
    slow for the engine, a common word over a huge index): QueryError, never a stuck worker."""
    limit = timeout_seconds()
    try:
        if connection.vendor == "postgresql":
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {int(limit * 1000)}")
                for sql in statement.prelude:
                    cursor.execute(sql)
                yield cursor
        else:
            with connection.cursor() as cursor, _sqlite_deadline(limit):
                yield cursor
    except DatabaseError as exc:
        text = str(exc).lower()
        if "regular expression" in text:
            raise QueryError("Not a valid regular expression for the database.") from None
        if "timeout" in text or "interrupted" in text or "canceling statement" in text:
            raise QueryError("The search took too long; search for something more specific.") from None
        raise


@contextmanager
def _sqlite_deadline(limit: float) -> Iterator[None]:
    connection.ensure_connection()
    raw = connection.connection
    end = monotonic() + limit
    # A non-zero return interrupts the statement (OperationalError "interrupted").
    raw.set_progress_handler(lambda: int(monotonic() > end), 10000)
    try:
        yield
    finally:
        raw.set_progress_handler(None, 0)
