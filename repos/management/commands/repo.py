from django.core.management.base import CommandError

from repos import selectors, services
from repos.management.base import SubcommandCommand, get_user, subparser
from repos.models import Role, Visibility


def split_full_name(full_name: str) -> tuple[str, str]:
    owner, sep, name = full_name.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise CommandError(f"expected <owner>/<name>, got {full_name!r}")
    return owner, name


class Command(SubcommandCommand):
    """`repo create` here makes an empty repository; sources' `repo` command, which Django runs
    instead (sources comes first in INSTALLED_APPS), adds `--import` to it."""

    help = (
        "Manage repositories: repo create <owner>/<name> [--private]; "
        "repo member <owner>/<name> <username> --role reader|maintainer|admin"
    )

    def add_subcommands(self, subparsers):
        create = subparser(subparsers, "create", "create a repository", self)
        create.add_argument("full_name", metavar="OWNER/NAME")
        create.add_argument("--private", action="store_true")
        create.add_argument("--description", default="")
        create.add_argument("--default-branch", default=None)
        self.add_create_arguments(create)
        member = subparser(subparsers, "member", "give a user a role on a repository", self)
        member.add_argument("full_name", metavar="OWNER/NAME")
        member.add_argument("username")
        member.add_argument("--role", required=True, choices=[r.label for r in Role])

    def add_create_arguments(self, create) -> None:
        """More options of `repo create`, for a subclass."""

    def handle_create(self, *, full_name, private, description, default_branch, **_):
        owner, name = split_full_name(full_name)
        repo = services.repository_create(
            owner=get_user(owner),
            name=name,
            description=description,
            visibility=Visibility.PRIVATE if private else Visibility.PUBLIC,
            default_branch=default_branch,
        )
        self.stdout.write(f"created {repo.full_name} ({repo.visibility}) at {repo.disk_path}")

    def handle_member(self, *, full_name, username, role, **_):
        owner, name = split_full_name(full_name)
        repo = selectors.repository_by_name(owner, name)
        if repo is None:
            raise CommandError(f"no repository {full_name}")
        user = get_user(username)
        services.membership_set(repo=repo, user=user, role=Role.from_label(role))
        self.stdout.write(f"{user.username} is {role} of {repo.full_name}")
