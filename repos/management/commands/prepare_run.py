"""What `make run` does on a primary before it starts the platform's processes, in one Django
process: migrate, collect static files, seed the demo (once), record pushes spooled while it was
down. Each of these as its own `manage.py` paid Django's start-up again (bench/make_run.py)."""

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Migrate, collect static files, seed the demo and replay spooled pushes: what make run "
        "does before it starts the web server and workers."
    )

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("seed_demo")
        # Pushes spooled while the last run was down or dying.
        call_command("replay_pushes")
