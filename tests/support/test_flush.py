"""The PostgreSQL flush by DELETE (tests.support.flush) empties every table in any order: rows
that refer to each other across tables go in one transaction, and no foreign key could refuse
that."""

from __future__ import annotations

import threading

import pytest
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection

from repos import services
from repos.models import Role
from tests.factories import UserFactory
from tests.support.wait import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("the DELETE flush is PostgreSQL's; SQLite's flush is Django's own DELETE")


def test_every_foreign_key_is_deferrable(postgres):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, conname FROM pg_constraint"
            " WHERE contype = 'f' AND NOT condeferrable"
        )
        assert cursor.fetchall() == []


def test_the_flush_deletes_every_row_and_keeps_the_sequences(postgres):
    owner, member = UserFactory(username="olga"), UserFactory(username="maud")
    repo = services.repository_create(owner=owner, name="proj")
    services.membership_set(repo=repo, user=member, role=Role.MAINTAINER)
    # As a transactional test's teardown asks for it: no sequence reset.
    statements = sql_flush(no_style(), connection, reset_sequences=False)
    assert statements[0] == "SET CONSTRAINTS ALL DEFERRED;"
    assert statements[1].startswith("LOCK TABLE ") and statements[1].endswith(" IN EXCLUSIVE MODE;")
    assert all(sql.startswith("DELETE FROM ") for sql in statements[2:])
    connection.ops.execute_sql_flush(statements)
    tables = connection.introspection.django_table_names(only_existing=True)
    with connection.cursor() as cursor:
        left = {}
        for table in tables:
            # The names are Django's own introspection's, quoted.
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608
            left[table] = cursor.fetchone()[0]
    assert [table for table, rows in left.items() if rows] == []
    # Ids are not handed out again after a flush (nor were they after TRUNCATE).
    assert UserFactory(username="otto").pk > member.pk


def test_the_flush_waits_for_a_writer_and_then_removes_its_rows(postgres):
    """A process a test left running may be inside a transaction that writes rows referring to
    rows the flush deletes. The flush waits for it, as TRUNCATE did, and its rows go too: without
    the lock, a writer committing between the DELETEs and the flush's COMMIT failed the flush."""
    owner = UserFactory(username="olga")
    repo = services.repository_create(owner=owner, name="proj")
    insert = (
        "INSERT INTO repos_membership (repository_id, user_id, role, created_at) VALUES (%s, %s, %s, now())"
    )
    assert _flush_beside_a_writer((insert, [repo.pk, owner.pk, Role.MAINTAINER])) == []
    assert _rows("repos_membership") == 0


def test_a_writer_that_locked_a_row_for_update_waits_for_the_flush(postgres):
    """Django's update_or_create reads the row FOR UPDATE, then writes it. A flush that lets
    that read through and then deletes the row deadlocks with the write: PostgreSQL ends one
    of them. Here the flush waits for the writer's transaction, which writes and ends."""
    owner, member = UserFactory(username="olga"), UserFactory(username="maud")
    repo = services.repository_create(owner=owner, name="proj")
    services.membership_set(repo=repo, user=member, role=Role.READER)
    read = ("SELECT id FROM repos_membership WHERE user_id = %s FOR UPDATE", [member.pk])
    write = ("UPDATE repos_membership SET role = %s WHERE user_id = %s", [Role.MAINTAINER, member.pk])
    assert _flush_beside_a_writer(read, write) == []
    assert _rows("repos_membership") == 0


def test_a_flush_that_deadlocks_with_a_writer_runs_again(postgres):
    """A writer holding a table the flush locks later, then writing one the flush locked
    earlier: PostgreSQL ends the flush's transaction (it waited first, so its check finds the
    cycle first), nothing of it is done, and it runs again once the writer is through."""
    owner = UserFactory(username="olga")
    repo = services.repository_create(owner=owner, name="proj")
    writes = {
        "repos_user": ("UPDATE repos_user SET first_name = 'Olga' WHERE id = %s", [owner.pk]),
        "repos_repository": ("UPDATE repos_repository SET description = 'later' WHERE id = %s", [repo.pk]),
    }
    lock = sql_flush(no_style(), connection, reset_sequences=False)[1]
    earlier, later = sorted(writes, key=lambda table: lock.index(f'"{table}"'))
    # The second write waits for the flush, which holds the earlier table: a deadlock.
    assert _flush_beside_a_writer(writes[later], writes[earlier]) == []
    assert _rows("repos_user", "repos_repository") == 0


def _flush_beside_a_writer(first: tuple, then: tuple | None = None) -> list[BaseException]:
    """A writer runs `first` in a transaction; a flush starts and waits for it; the writer runs
    `then` and commits. Returns what the flush raised, once it has ended."""
    writer = connection.copy()
    writer.ensure_connection()
    writer.set_autocommit(False)
    try:
        with writer.cursor() as cursor:
            cursor.execute(*first)
        flusher, failures = _flushing()
        wait_until(
            lambda: _waiting_statements() == ["LOCK TABLE"],
            timeout=10,
            what="the flush waiting for the writer",
        )
        if then is not None:
            with writer.cursor() as cursor:
                cursor.execute(*then)
        writer.commit()
        flusher.join(timeout=30)
    finally:
        writer.close()
    assert not flusher.is_alive()
    return failures


def _rows(*tables: str) -> int:
    with connection.cursor() as cursor:
        total = 0
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608 - our names
            total += cursor.fetchone()[0]
        return total


def _flushing() -> tuple[threading.Thread, list[BaseException]]:
    """A flush started in a thread of its own (its own connection), and what it raised."""
    failures: list[BaseException] = []

    def flush() -> None:
        try:
            connection.ops.execute_sql_flush(sql_flush(no_style(), connection, reset_sequences=False))
        except BaseException as error:  # reported by the test's thread
            failures.append(error)
        finally:
            connection.close()

    flusher = threading.Thread(target=flush)
    flusher.start()
    return flusher, failures


def _waiting_statements() -> list[str]:
    """The first two words of every statement of this database waiting for a lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return [" ".join(row[0].split()[:2]) for row in cursor.fetchall()]
