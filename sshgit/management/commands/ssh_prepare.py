"""`manage.py ssh_prepare`: make what sshd needs (sshgit.sshd.prepare) and print, as one JSON
line, what `make run` starts: {"sshd": argv, "gateway_socket": path, "url": ...}, or
{"unavailable": reason}. hostsite.run stays free of Django by asking this command."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand

from sshgit import sshd


class Command(BaseCommand):
    help = "Prepare host keys, the SSH account, the programs and sshd_config; print the result as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="host named in the printed URL")
        parser.add_argument(
            "--match-block",
            action="store_true",
            help="print the Match block for the system's sshd (SSH_SYSTEM_SSHD=1) instead of JSON",
        )

    def handle(self, *args, **options):
        if settings.SSH_PORT == 0:
            result: dict = {"unavailable": "SSH_PORT=0"}
        else:
            try:
                p = sshd.prepare()
            except (sshd.SshUnavailable, OSError, RuntimeError) as exc:
                result = {"unavailable": str(exc)}
            else:
                if options["match_block"]:
                    self.stdout.write(sshd.match_block(p, user=settings.SSH_USER), ending="")
                    return
                result = {
                    **({} if settings.SSH_SYSTEM_SSHD else {"sshd": sshd.sshd_argv(p)}),
                    "gateway_socket": str(p.socket),
                    "port": settings.SSH_PORT,
                    "url": sshd.ready_banner(host=options["host"]),
                }
        self.stdout.write(json.dumps(result))
