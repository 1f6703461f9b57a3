import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("repos", "0015_backfill_push_changes"),
        ("workspaces", "0009_blocked_objects"),
    ]

    operations = [
        migrations.CreateModel(
            name="RefRename",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("old_ref", models.CharField(max_length=255)),
                ("new_ref", models.CharField(max_length=255)),
                ("sha", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("applied_at", models.DateTimeField(blank=True, null=True)),
                (
                    "repository",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="repos.repository"
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        models.F("repository"), models.F("old_ref"), name="refrename_once"
                    )
                ],
            },
        ),
    ]
