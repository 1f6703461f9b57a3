"""`manage.py ssh_gateway`: the process sshd's programs talk to (sshgit.gateway). `make run`
starts it beside sshd; it also writes the programs into the runtime directory, so that they
and the socket always match the running code."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from sshgit import gateway, sshd


class Command(BaseCommand):
    help = "Run the SSH gateway (key look-ups and git sessions for sshd) on its Unix socket."

    def add_arguments(self, parser):
        parser.add_argument("--socket", help="the Unix socket (default: the runtime directory's)")
        parser.add_argument(
            "--serve",
            help="module:function that serves a session (default sshgit.session:serve); tests use it",
        )
        parser.add_argument("--drain-timeout", type=float, default=30.0)

    def handle(self, *args, **options):
        paths = sshd.paths()
        socket_path = options["socket"] or paths.socket
        gw = gateway.Gateway(
            socket_path,
            ssh_user=settings.SSH_USER,
            serve=gateway.load_serve(options["serve"]),
            drain_timeout=options["drain_timeout"],
        )
        gateway.preload()
        gw.listen()
        gw.run()
