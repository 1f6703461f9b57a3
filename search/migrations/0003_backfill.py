"""Index the names, descriptions, accounts and proposals that exist already (code and commits
are read from git by `manage.py search reindex` or the first push)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Repository = apps.get_model("repos", "Repository")
    User = apps.get_model("repos", "User")
    Proposal = apps.get_model("reviews", "Proposal")
    RepositoryEntry = apps.get_model("search", "RepositoryEntry")
    UserEntry = apps.get_model("search", "UserEntry")
    ProposalEntry = apps.get_model("search", "ProposalEntry")
    RepositoryEntry.objects.bulk_create(
        RepositoryEntry(repository=r, owner_name=r.owner.username, name=r.name, description=r.description)
        for r in Repository.objects.select_related("owner").iterator()
    )
    UserEntry.objects.bulk_create(
        UserEntry(user=u, username=u.username, display_name=u.display_name)
        for u in User.objects.filter(is_active=True).iterator()
    )
    ProposalEntry.objects.bulk_create(
        ProposalEntry(
            proposal=p,
            repository_id=p.repository_id,
            number=p.number,
            title=p.title,
            description=p.description,
            author_name=p.author.username,
        )
        for p in Proposal.objects.select_related("author").iterator()
    )


class Migration(migrations.Migration):
    dependencies = [("search", "0002_engines")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
