"""The audit log moves to repos (repos.AuditEntry): every row is copied with its id and time,
then the old table goes. The workspace a row named is its (repository, target user)."""

from django.core.management.color import no_style
from django.db import migrations

BATCH = 1000


def copy_rows(apps, schema_editor):
    Old = apps.get_model("workspaces", "AuditEntry")
    New = apps.get_model("repos", "AuditEntry")
    batch = []
    for row in Old.objects.order_by("pk").select_related("repository__owner").iterator(chunk_size=BATCH):
        detail = (
            {"repository": f"{row.repository.owner.username}/{row.repository.name}"} if row.repository else {}
        )
        batch.append(
            New(
                id=row.pk,
                actor_id=row.actor_id,
                action=row.action,
                repository_id=row.repository_id,
                target_user_id=row.target_user_id,
                reason=row.reason,
                before=row.before,
                after=row.after,
                detail=detail,
                created_at=row.created_at,
            )
        )
        if len(batch) >= BATCH:
            New.objects.bulk_create(batch)
            batch = []
    New.objects.bulk_create(batch)
    # Ids were given explicitly: PostgreSQL's sequence must continue after them (no-op on SQLite).
    with schema_editor.connection.cursor() as cursor:
        for sql in schema_editor.connection.ops.sequence_reset_sql(no_style(), [New]):
            cursor.execute(sql)


def copy_back(apps, schema_editor):
    Old = apps.get_model("workspaces", "AuditEntry")
    New = apps.get_model("repos", "AuditEntry")
    Old.objects.bulk_create(
        Old(
            id=row.pk,
            actor_id=row.actor_id,
            action=row.action[:20],
            repository_id=row.repository_id,
            target_user_id=row.target_user_id,
            reason=row.reason,
            before=row.before,
            after=row.after,
            created_at=row.created_at,
        )
        for row in New.objects.order_by("pk").iterator(chunk_size=BATCH)
    )
    for row in New.objects.only("pk", "created_at").iterator(chunk_size=BATCH):
        Old.objects.filter(pk=row.pk).update(created_at=row.created_at)  # auto_now_add on create
    New.objects.all().delete()
    with schema_editor.connection.cursor() as cursor:
        for sql in schema_editor.connection.ops.sequence_reset_sql(no_style(), [Old]):
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0005_workspace_flags"),
        ("repos", "0011_auditentry"),
    ]

    operations = [
        migrations.RunPython(copy_rows, copy_back),
        migrations.DeleteModel(name="AuditEntry"),
    ]
