import time

from django.core.management.base import CommandError

from repos import importing, maintenance, netguard, selectors, services
from repos.errors import ServiceError
from repos.hooks import refspace
from repos.management.base import SubcommandCommand, get_user, subparser
from repos.models import RefsMode, Role, Visibility


def _split(full_name: str) -> tuple[str, str]:
    owner, sep, name = full_name.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise CommandError(f"expected <owner>/<name>, got {full_name!r}")
    return owner, name


class Command(SubcommandCommand):
    help = (
        "Manage repositories: repo create <owner>/<name> [--private] "
        "[--import PATH-OR-URL [--refs default|all]]; "
        "repo member <owner>/<name> <username> --role reader|maintainer|admin"
    )

    def add_subcommands(self, subparsers):
        create = subparser(subparsers, "create", "create a repository", self)
        create.add_argument("full_name", metavar="OWNER/NAME")
        create.add_argument("--private", action="store_true")
        create.add_argument("--description", default="")
        create.add_argument("--default-branch", default=None)
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
        member = subparser(subparsers, "member", "give a user a role on a repository", self)
        member.add_argument("full_name", metavar="OWNER/NAME")
        member.add_argument("username")
        member.add_argument("--role", required=True, choices=[r.label for r in Role])

    def handle_create(self, *, full_name, private, description, default_branch, import_from, refs, **_):
        owner, name = _split(full_name)
        visibility = Visibility.PRIVATE if private else Visibility.PUBLIC
        if not import_from:
            if refs != RefsMode.DEFAULT:
                raise CommandError("--refs goes with --import")
            repo = services.repository_create(
                owner=get_user(owner),
                name=name,
                description=description,
                visibility=visibility,
                default_branch=default_branch,
            )
            self.stdout.write(f"created {repo.full_name} ({repo.visibility}) at {repo.disk_path}")
            return
        user = get_user(owner)
        try:
            # The operator counts as staff: local paths, file://, ssh://, private addresses, --refs all.
            imported = importing.import_now(
                owner=user,
                name=name,
                source=import_from,
                refs_mode=refs,
                description=description,
                visibility=visibility,
                default_branch=default_branch,
                echo=True,
            )
        except ServiceError as exc:
            shown = netguard.split_credentials(import_from)[0] if "://" in import_from else import_from
            raise CommandError(f"Import from {shown} failed: {exc.message}") from None
        repo = imported.repository
        for line in imported.report.lines():
            self.stdout.write(line)
        # The source's packing is not ours to keep (a host may serve packs without a delta search).
        started = time.monotonic()
        maintenance.repack_fresh(repo)
        self.stdout.write(f"repacked with a fresh delta search in {time.monotonic() - started:.1f} s")
        # Last, as without --import: scripts read the path from the last line.
        self.stdout.write(f"created {repo.full_name} ({repo.visibility}) at {repo.disk_path}")

    def handle_member(self, *, full_name, username, role, **_):
        owner, name = _split(full_name)
        repo = selectors.repository_by_name(owner, name)
        if repo is None:
            raise CommandError(f"no repository {full_name}")
        user = get_user(username)
        services.membership_set(repo=repo, user=user, role=Role.from_label(role))
        self.stdout.write(f"{user.username} is {role} of {repo.full_name}")
