"""Shared plumbing for the scriptable management commands (user, token, repo)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from repos.errors import ServiceError
from repos.models import User


class SubcommandCommand(BaseCommand):
    """`manage.py <noun> <verb> ...`: each verb is a method named `handle_<verb>`."""

    def add_subcommands(self, subparsers) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def add_arguments(self, parser):
        subparsers = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        self.add_subcommands(subparsers)

    def handle(self, *args, verb: str, **options):
        try:
            return getattr(self, f"handle_{verb.replace('-', '_')}")(**options)
        except ServiceError as exc:
            raise CommandError(exc.message) from None


def get_user(username: str) -> User:
    user = User.objects.filter(username__iexact=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r}")
    return user


def subparser(subparsers, name: str, help_text: str, command: BaseCommand):
    # Django's CommandParser turns argument errors into CommandError instead of SystemExit.
    return subparsers.add_parser(
        name,
        help=help_text,
        called_from_command_line=command._called_from_command_line,  # type: ignore[attr-defined]
    )
