"""The PostgreSQL flush by DELETE (tests.support.flush) empties every table in any order: rows
that refer to each other across tables go in one transaction, and no foreign key could refuse
that."""

from __future__ import annotations

import pytest
from django.core.management.color import no_style
from django.core.management.sql import sql_flush
from django.db import connection

from repos import services
from repos.models import Role
from tests.factories import UserFactory

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
    assert all(sql.startswith("DELETE FROM ") for sql in statements[1:])
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
