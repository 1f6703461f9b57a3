"""The gateway's session processes: each session runs in a child forked from the gateway, and
one is forked ahead of need and warmed while nobody waits (a *spare*), then handed the next
session's file descriptors over a socket pair.

Why ahead: a process forked from Django pays, on its first query, for its own database
connection and for copying every memory page it touches (Python's reference counts write to
the objects it reads): ~10 ms measured here, on every push's critical path. A spare pays it
before the session arrives.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pwd
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import connections

from repos import selectors as repo_selectors
from sshgit import channel, selectors

log = logging.getLogger("sshgit.gateway")

HEADER_MAX = 64 * 1024
# A spare that waited longer than this closes its database connection before its session:
# the server may have dropped an idle one.
STALE_AFTER = 60.0


@dataclass
class Spare:
    pid: int
    sock: socket.socket  # the gateway's end of the socket pair


def fork_spare(forget_parent: Callable[[], None], serve) -> Spare | None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        log.exception("ssh gateway: could not fork a spare")
        ours.close()
        theirs.close()
        return None
    if pid == 0:
        ours.close()
        _wait_for_session(forget_parent, serve, theirs)  # never returns
    theirs.close()
    return Spare(pid, ours)


def hand_over(spare: Spare, conn: socket.socket, request: dict, fds: list[int]) -> bool:
    """Give the spare this session: the request, the channel's fds and hostsite-shell's
    connection (for the status). False if the spare is gone: the caller forks instead."""
    try:
        socket.send_fds(spare.sock, [json.dumps(request).encode()], [*fds, conn.fileno()])
        return True
    except OSError:
        return False
    finally:
        spare.sock.close()


def _wait_for_session(forget_parent: Callable[[], None], serve, sock: socket.socket) -> None:
    status = 0
    try:
        forget_parent()
        run_as_repository_owner()  # before warming: whatever it opens is the session's account's
        _warm()
        born = time.monotonic()
        data, fds, _flags, _addr = socket.recv_fds(sock, HEADER_MAX, 4)
        sock.close()
        if not data or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            os._exit(0)  # the gateway stopped, or replaced this spare
        if time.monotonic() - born > STALE_AFTER:
            connections.close_all()  # its own connection: closing it touches nobody else's
        run_session(serve, socket.socket(fileno=fds[3]), json.loads(data), fds[:3])
    except BaseException:
        with contextlib.suppress(Exception):
            log.exception("ssh gateway: a spare failed")
        status = 1
    os._exit(status)


def _warm() -> None:
    # The queries every session starts with, on nothing: the connection opens and the pages
    # the ORM touches are copied now. A failure here is the session's to meet, not the spare's.
    with contextlib.suppress(Exception):
        selectors.session_key(0)
        repo_selectors.repository_by_name("warm", "up")


def run_session(serve, conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the session's process: the channel takes fds 0-2, then sshgit.session.serve runs; the
    status goes to hostsite-shell at the release or, if the session never releases, from the
    gateway when it reaps this process. Never returns."""
    status = 1
    try:
        keep_logs_off_the_channel()
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        channel.on_release(lambda code: _report(conn, code))
        run_as_repository_owner()
        status = int(
            serve(
                key_id=int(request["key_id"]),
                command=request.get("command"),
                protocol=request.get("protocol"),
                remote=str(request.get("remote") or ""),
            )
        )
    except BaseException as exc:
        with contextlib.suppress(Exception):
            log.exception("ssh session failed")
            os.write(2, f"hostsite: internal error ({type(exc).__name__})\n".encode())
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(status & 0xFF)


def run_as_repository_owner() -> None:
    """As root, a session runs as the account that owns REPO_ROOT when that is not root (the
    container's `hostsite` user): git must not leave root-owned files in repositories that the
    web server and worker write to."""
    if os.geteuid() != 0:
        return
    try:
        owner = Path(settings.REPO_ROOT).stat().st_uid
    except OSError:
        return
    if owner == 0:
        return
    entry = pwd.getpwuid(owner)
    os.setgroups([])
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    os.environ["HOME"] = entry.pw_dir


def keep_logs_off_the_channel() -> None:
    """Before the channel takes fds 0-2: the gateway's own output moves to a copy of its
    stderr, so a log line or a stray print never lands in a git client's protocol stream."""
    out = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "fileno", None):
                with contextlib.suppress(OSError, ValueError):
                    if handler.stream.fileno() in (1, 2):
                        handler.setStream(out)
    sys.stdout = sys.stderr = out


def _report(conn: socket.socket, status: int) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(f"{status & 0xFF}\n".encode())
    conn.close()


_INHERITED: list = []


def set_aside_inherited_connections() -> None:
    """The child's copies of the parent's database connections are kept referenced and never
    used or closed: closing one would end the parent's session too (PostgreSQL's terminate
    message goes down the shared socket). The child opens its own; os._exit frees nothing."""
    for wrapper in connections.all(initialized_only=True):
        if wrapper.connection is not None:
            _INHERITED.append(wrapper.connection)
            wrapper.connection = None
