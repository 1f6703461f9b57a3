import sys

from repos import services
from repos.management.base import SubcommandCommand, subparser


class Command(SubcommandCommand):
    help = "Manage users: user create <username> [--email E] [--staff] [--password-stdin]"

    def add_subcommands(self, subparsers):
        create = subparser(subparsers, "create", "create a user", self)
        create.add_argument("username")
        create.add_argument("--email", default="")
        create.add_argument("--staff", action="store_true", help="site staff (moderation, sees everything)")
        create.add_argument(
            "--password-stdin", action="store_true", help="read the password from the first line of stdin"
        )

    def handle_create(self, *, username, email, staff, password_stdin, **_):
        password = None
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
        user = services.user_create(username=username, email=email, password=password, is_staff=staff)
        self.stdout.write(f"created user {user.username}{' (staff)' if staff else ''}")
