from django.core.management.base import BaseCommand, CommandError

from repos import push_spool


class Command(BaseCommand):
    help = (
        "Record the pushes post-receive spooled that no web process recorded (the database was "
        "unavailable, or the web worker died). Safe to run any time: a push is never recorded twice."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--grace",
            type=float,
            default=None,
            help="leave files younger than this many seconds to a live writer "
            "(default: PUSH_SPOOL_GRACE_SECONDS; files whose writer is gone are replayed at once)",
        )

    def handle(self, *args, grace=None, **options):
        if grace is not None and grace < 0:
            raise CommandError("--grace must be zero or more seconds")
        result = push_spool.replay(grace=grace)
        if result.recorded or result.waiting or result.failed or options["verbosity"] > 1:
            self.stdout.write(
                f"spooled pushes: {result.recorded} recorded, {result.waiting} waiting, "
                f"{result.failed} failed"
            )
