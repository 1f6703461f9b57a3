"""A session server for the runtime tests (`ssh_gateway --serve tests.sshgit.echo_serve:serve`):
it reports what reached it as JSON on the channel, so the tests see the plumbing (sshd, the
programs, the gateway's fork) apart from the git session the lead's sshgit.session serves.
Commands steer it: `crash` (SIGKILL itself), `raise`, `sleep <s>`, `cat`, `exit <n>`."""

from __future__ import annotations

import json
import os
import signal
import time


def serve(*, key_id: int, command: str | None, protocol: str | None, remote: str) -> int:
    report = {
        "key_id": key_id,
        "command": command,
        "protocol": protocol,
        "remote": remote,
        "uid": os.getuid(),
    }
    os.write(1, (json.dumps(report) + "\n").encode())
    word, _, arg = (command or "").partition(" ")
    if word == "crash":
        os.kill(os.getpid(), signal.SIGKILL)
    if word == "raise":
        raise RuntimeError("echo_serve was told to raise")
    if word == "sleep":
        time.sleep(float(arg))
    if word == "cat":
        while chunk := os.read(0, 65536):
            os.write(1, chunk)
    if word == "exit":
        os.write(2, b"leaving\n")  # fd 2 is the channel; sys.stderr is the log
        return int(arg)
    return 0
