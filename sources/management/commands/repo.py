"""`manage.py repo`: repos' command, whose `create` also takes `--import`.

Django runs the command of the app listed first in INSTALLED_APPS, so sources comes before
repos there; repos' own command cannot import from here (it sits below sources)."""

import time

from django.core.management.base import CommandError

from repos import maintenance, netguard
from repos.errors import ServiceError
from repos.hooks import refspace
from repos.management.base import get_user
from repos.management.commands import repo
from repos.models import RefsMode, Visibility
from sources import importing


class Command(repo.Command):
    help = (
        "Manage repositories: repo create <owner>/<name> [--private] "
        "[--import PATH-OR-URL [--refs default|all]]; "
        "repo member <owner>/<name> <username> --role reader|maintainer|admin"
    )

    def add_create_arguments(self, create) -> None:
        create.add_argument(
            "--import",
            dest="import_from",
            metavar="PATH-OR-URL",
            help="import HEAD, branches and tags of an existing repository (git's progress "
            "is shown), then repack it with a fresh delta search",
        )
        create.add_argument(
            "--refs",
            choices=RefsMode.values,
            default=RefsMode.DEFAULT,
            help="with --import: 'all' also keeps the other namespaces (refs/pull/...) "
            f"under {refspace.IMPORTED}, never advertised",
        )

    def handle_create(self, *, full_name, private, description, default_branch, import_from, refs, **options):
        if not import_from:
            if refs != RefsMode.DEFAULT:
                raise CommandError("--refs goes with --import")
            super().handle_create(
                full_name=full_name, private=private, description=description, default_branch=default_branch
            )
            return
        owner, name = repo.split_full_name(full_name)
        user = get_user(owner)
        try:
            # The operator counts as staff: local paths, file://, ssh://, private addresses, --refs all.
            imported = importing.import_now(
                owner=user,
                name=name,
                source=import_from,
                refs_mode=refs,
                description=description,
                visibility=Visibility.PRIVATE if private else Visibility.PUBLIC,
                default_branch=default_branch,
                echo=True,
            )
        except ServiceError as exc:
            shown = netguard.split_credentials(import_from)[0] if "://" in import_from else import_from
            raise CommandError(f"Import from {shown} failed: {exc.message}") from None
        created = imported.repository
        for line in imported.report.lines():
            self.stdout.write(line)
        # The source's packing is not ours to keep (a host may serve packs without a delta search).
        started = time.monotonic()
        maintenance.repack_fresh(created)
        self.stdout.write(f"repacked with a fresh delta search in {time.monotonic() - started:.1f} s")
        # Last, as without --import: scripts read the path from the last line.
        self.stdout.write(f"created {created.full_name} ({created.visibility}) at {created.disk_path}")
