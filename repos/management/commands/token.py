from repos import services
from repos.management.base import SubcommandCommand, get_user, subparser
from repos.models import TokenScope


class Command(SubcommandCommand):
    help = "Manage tokens: token create <username> [--scope read|write|status] [--name N] (prints only the token)"

    def add_subcommands(self, subparsers):
        create = subparser(subparsers, "create", "create a personal access token", self)
        create.add_argument("username")
        create.add_argument("--scope", choices=TokenScope.values, default=TokenScope.READ)
        create.add_argument("--name", default="")

    def handle_create(self, *, username, scope, name, **_):
        _token, secret = services.token_create(user=get_user(username), name=name or "manage.py", scope=scope)
        # Only the token on stdout, so `TOKEN=$(manage.py token create alice)` works.
        self.stdout.write(secret)
