"""The backfill (repos 0015): every push recorded before the replication log becomes a change of
its repository, 1..n per repository in push-id order, with the push's kind, pusher and time;
each repository's generation is its last; going back is a no-op. Real migrations on the test
database, in batches smaller than the data."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import RepositoryFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("repos", "0014_replication_log")]
AFTER = [("repos", "0015_backfill_push_changes")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def test_pushes_become_numbered_changes_and_going_back_keeps_them(monkeypatch):
    backfill = importlib.import_module("repos.migrations.0015_backfill_push_changes")
    monkeypatch.setattr(backfill, "BATCH", 3)  # several batches, one ending mid-repository
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    one, two = RepositoryFactory(owner=alice, name="one"), RepositoryFactory(owner=alice, name="two")
    untouched = RepositoryFactory(owner=bob, name="quiet")
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    try:
        old = migrate(BEFORE)
        Push = old.get_model("repos", "Push")
        RefUpdate = old.get_model("repos", "RefUpdate")
        Change = old.get_model("repos", "RepositoryChange")
        Repository = old.get_model("repos", "Repository")
        Change.objects.all().delete()  # as before the log existed (creation now writes one)
        Repository.objects.update(generation=0)
        made = []
        for repo_id, protocol, pusher in [
            (one.pk, "http", alice),
            (two.pk, "ssh", bob),
            (one.pk, "web", alice),
            (one.pk, "mirror", None),
            (two.pk, "import", bob),
            (one.pk, "recovered", None),
            (one.pk, "api", alice),
        ]:
            push = Push.objects.create(
                repository_id=repo_id,
                pusher_id=pusher.pk if pusher else None,
                pusher_name=pusher.username if pusher else "mirror",
                protocol=protocol,
            )
            made.append(push.pk)
        for i, name in enumerate(["refs/heads/main", "refs/tags/v1", "refs/heads/dev"]):
            RefUpdate.objects.create(push_id=made[0], ref=name, old="0" * 40, new=f"{i}" * 40)
        Push.objects.filter(pk=made[0]).update(created_at=when)

        new = migrate(AFTER)
        Change = new.get_model("repos", "RepositoryChange")
        Repository = new.get_model("repos", "Repository")
        rows = list(Change.objects.order_by("repository_id", "generation"))
        got = [(r.repository_id, r.generation, r.kind, r.push_id, r.actor_id) for r in rows]
        assert got == [
            (one.pk, 1, "push", made[0], alice.pk),
            (one.pk, 2, "web", made[2], alice.pk),
            (one.pk, 3, "mirror", made[3], None),
            (one.pk, 4, "reconcile", made[5], None),
            (one.pk, 5, "web", made[6], alice.pk),
            (two.pk, 1, "push", made[1], bob.pk),
            (two.pk, 2, "import", made[4], bob.pk),
        ]
        first = Change.objects.get(push_id=made[0])
        assert first.created_at == when and first.summary == "refs/heads/dev and 2 more"
        generations = dict(Repository.objects.values_list("pk", "generation"))
        assert generations == {one.pk: 5, two.pk: 2, untouched.pk: 0}
        assert not any(r.needs_confirmation for r in rows)

        # Going back and forth again adds nothing: pushes with a row are skipped.
        migrate(BEFORE)
        again = migrate(AFTER).get_model("repos", "RepositoryChange")
        assert again.objects.count() == 7
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
