"""Nameless heads move to the one-component layout (repos/hooks/refspace.py): one task per
repository renames them in git and in every row that names them (workspaces.refmigration).
The task, not this migration, does the work: it takes the repository's lock, retries when a
push moved a ref meanwhile, and may run again at no harm; a migration must not wait on git."""

from django.db import migrations, transaction


def enqueue(apps, schema_editor):
    Repository = apps.get_model("repos", "Repository")
    ids = list(Repository.objects.values_list("pk", flat=True))
    if not ids:
        return
    from repos.enqueue import send  # the sender of today's code: tasks are sent by name

    def send_all():
        for pk in ids:
            send("workspaces.tasks.migrate_nameless_layout", pk)

    # robust: a broker that cannot be reached while migrating is logged, and the schema stays
    # migrated; until a task runs, a nameless push makes a new head beside an old-layout one.
    transaction.on_commit(send_all, robust=True)


class Migration(migrations.Migration):
    dependencies = [("workspaces", "0010_refrename")]

    operations = [migrations.RunPython(enqueue, migrations.RunPython.noop)]
