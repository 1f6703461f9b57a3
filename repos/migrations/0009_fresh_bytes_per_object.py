from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("repos", "0008_sources_and_object_checks")]

    operations = [
        migrations.RenameField("repository", "fresh_delta_ratio", "fresh_bytes_per_object"),
    ]
