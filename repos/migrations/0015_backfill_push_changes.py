"""Every push recorded before the replication log becomes a change of its repository, numbered
1..n per repository in push-id order, and the repository's generation is set to its last: the
pushlog lists pushes through the log, so a push without a row would vanish from it.

A repository that already has rows (pushes recorded after 0014 ran) keeps them as they are; its
older pushes are numbered after them, since renumbering rows a replica may have seen would
lie to it. Batches of BATCH pushes, each one bulk insert plus two updates, on SQLite and
PostgreSQL alike. Going back leaves the rows: 0014's reversal drops the table.
"""

from django.db import migrations
from django.db.models import Count, Max, Min, OuterRef, Subquery

BATCH = 5000

KIND_OF_PROTOCOL = {
    "http": "push",
    "ssh": "push",
    "web": "web",
    "api": "web",
    "mirror": "mirror",
    "import": "import",
    "recovered": "reconcile",
}


def _summaries(RefUpdate, push_ids: list[int]) -> dict[int, str]:
    # One aggregate per batch: an import's push may hold 100k ref updates.
    rows = (
        RefUpdate.objects.filter(push_id__in=push_ids)
        .values("push_id")
        .annotate(n=Count("id"), first=Min("ref"))
    )
    return {
        row["push_id"]: row["first"] + (f" and {row['n'] - 1} more" if row["n"] > 1 else "") for row in rows
    }


def _flush(apps, batch: list[tuple], generations: dict[int, int]) -> None:
    Push = apps.get_model("repos", "Push")
    RefUpdate = apps.get_model("repos", "RefUpdate")
    RepositoryChange = apps.get_model("repos", "RepositoryChange")
    summaries = _summaries(RefUpdate, [pk for pk, *_ in batch])
    rows = []
    for pk, repository_id, protocol, pusher_id in batch:
        generations[repository_id] = generations.get(repository_id, 0) + 1
        rows.append(
            RepositoryChange(
                repository_id=repository_id,
                generation=generations[repository_id],
                kind=KIND_OF_PROTOCOL.get(protocol, "push"),
                push_id=pk,
                actor_id=pusher_id,
                summary=summaries.get(pk, "")[:300],
            )
        )
    RepositoryChange.objects.bulk_create(rows)
    # created_at is auto_now_add: the push's own time, in one statement.
    RepositoryChange.objects.filter(push_id__in=[pk for pk, *_ in batch]).update(
        created_at=Subquery(Push.objects.filter(pk=OuterRef("push_id")).values("created_at")[:1])
    )


def backfill(apps, schema_editor):
    Push = apps.get_model("repos", "Push")
    Repository = apps.get_model("repos", "Repository")
    RepositoryChange = apps.get_model("repos", "RepositoryChange")
    generations = dict(
        RepositoryChange.objects.values("repository_id")
        .annotate(m=Max("generation"))
        .values_list("repository_id", "m")
    )
    pending = (
        Push.objects.filter(change__isnull=True)
        .order_by("pk")
        .values_list("pk", "repository_id", "protocol", "pusher_id")
    )
    batch: list[tuple] = []
    for row in pending.iterator(chunk_size=BATCH):
        batch.append(row)
        if len(batch) == BATCH:
            _flush(apps, batch, generations)
            batch = []
    if batch:
        _flush(apps, batch, generations)
    if not generations:
        return
    last = RepositoryChange.objects.filter(repository_id=OuterRef("pk")).order_by("-generation")
    Repository.objects.filter(pk__in=RepositoryChange.objects.values("repository_id")).update(
        generation=Subquery(last.values("generation")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("repos", "0014_replication_log"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
