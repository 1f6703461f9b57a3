"""The audit log's move from workspaces to repos keeps every row: its id, time, actor, target,
reason and flags; going back restores the old table. Real migrations on the test database."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("workspaces", "0005_workspace_flags")]
AFTER = [("workspaces", "0006_auditentry_to_repos")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_rows_move_to_repos_and_back():
    staff, alice = UserFactory(username="staff", is_staff=True), UserFactory(username="alice")
    repo = RepositoryFactory(owner=alice, name="proj")
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    try:
        old_apps = migrate(BEFORE)
        Old = old_apps.get_model("workspaces", "AuditEntry")
        Old.objects.create(
            id=41,
            actor_id=staff.pk,
            action="take_down",
            repository_id=repo.pk,
            target_user_id=alice.pk,
            reason="spam",
            before={"frozen": False},
            after={"frozen": True},
        )
        Old.objects.filter(pk=41).update(created_at=when)

        new_apps = migrate(AFTER)
        New = new_apps.get_model("repos", "AuditEntry")
        row = New.objects.get()
        assert (row.pk, row.actor_id, row.action, row.repository_id, row.target_user_id, row.reason) == (
            41,
            staff.pk,
            "take_down",
            repo.pk,
            alice.pk,
            "spam",
        )
        assert (row.before, row.after, row.created_at) == ({"frozen": False}, {"frozen": True}, when)
        assert row.detail == {"repository": "alice/proj"}
        # New rows continue after the copied ids (PostgreSQL's sequence was reset).
        assert New.objects.create(action="rename").pk > 41

        back = migrate(BEFORE).get_model("workspaces", "AuditEntry")
        assert sorted(back.objects.values_list("action", flat=True)) == ["rename", "take_down"]
        old = back.objects.get(pk=41)
        assert (old.reason, old.after, old.created_at) == ("spam", {"frozen": True}, when)
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
