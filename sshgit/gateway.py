"""The SSH gateway: one long-running process with Django loaded, on a Unix socket, that the
programs sshd runs (sshgit/programs/) talk to.

Why: Django takes ~750 ms to start, while the AuthorizedKeysCommand may take 20 ms (median,
100k keys) and a push 100 ms over plain OpenSSH + git-shell. So those programs stay tiny and
this process answers them:

- a key look-up (`{"op": "key", "fingerprint": ...}`) inline: one indexed query;
- a session (`{"op": "session", ...}` plus the SSH channel's fds 0/1/2 over SCM_RIGHTS) by
  forking a child that takes those fds as its own 0/1/2 and runs `sshgit.session.serve`. The
  parent keeps the connection and reports the child's exit status to hostsite-shell when it
  reaps it, so a crashed or killed child still ends the client's session with a status.

Single-threaded (selectors): forking is safe only without other threads. Peers must be the
SSH account or this process's own uid (SO_PEERCRED).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import pwd
import selectors
import signal
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

from django.db import DatabaseError, connections
from kombu.transport import resolve_transport

from gitcore.git import git_version
from hostsite.celery import app
from repos.gitaccess.backends import backends
from sshgit import spares
from sshgit.selectors import usable_key
from sshgit.session import serve

log = logging.getLogger("sshgit.gateway")

Serve = Callable[..., int]
HEADER_MAX = 64 * 1024
# A peer that passed the uid check still gets only this long to send its request: the loop
# reads it inline (the programs send it right after connecting).
REQUEST_TIMEOUT = 2.0


def load_serve(dotted: str | None) -> Serve:
    """`module:function` (tests give a stand-in); default sshgit.session:serve. Imported at
    start, so a broken session module stops the gateway instead of failing every session."""
    if not dotted:
        return serve
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)


def peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def exit_status(wait_status: int) -> int:
    # A shell's convention for a child killed by a signal: 128 + the signal number.
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code


def preload() -> None:
    """Build, once and before the first fork, what every session would otherwise build for itself
    in its child and throw away: the git access backends, git's version, and Celery's finalized
    app, its routes and the broker transport's modules (a push enqueues its follow-up tasks).
    Measured with bench/ssh.py --profile: ~190 ms of each push's session (405 -> 214 ms median),
    ~90 of them finalizing the app. Nothing here opens a connection or starts a thread, so
    nothing is shared across the fork."""
    backends()
    git_version()  # a `git version` per session otherwise (reftable detection)
    app.finalize(auto=True)
    _ = app.amqp.router  # routes and queues, built on first use
    resolve_transport(app.connection_for_write().transport_cls)


class Gateway:
    def __init__(self, socket_path: Path, *, ssh_user: str, serve: Serve, drain_timeout: float = 30.0):
        self.socket_path = Path(socket_path)
        self.serve = serve
        self.drain_timeout = drain_timeout
        self.allowed_uids = {os.geteuid()}
        self.ssh_uid: int | None = None
        with contextlib.suppress(KeyError):
            self.ssh_uid = pwd.getpwnam(ssh_user).pw_uid
            self.allowed_uids.add(self.ssh_uid)
        self.sessions: dict[int, socket.socket] = {}  # child pid -> hostsite-shell's connection
        self.stopping = False
        self.selector = selectors.DefaultSelector()
        # A warmed child waiting for the next session (sshgit.spares); off: fork per session.
        self.spares = os.environ.get("HOSTSITE_SSH_SPARES", "1") != "0"
        self.spare: spares.Spare | None = None

    # --- setup ---------------------------------------------------------------------------------
    def listen(self) -> None:
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Created 0600 (no window where others could connect), then given to the SSH account.
        old_umask = os.umask(0o177)
        try:
            self.listener.bind(str(self.socket_path))
        finally:
            os.umask(old_umask)
        if os.geteuid() == 0 and self.ssh_uid is not None:
            os.chown(self.socket_path, self.ssh_uid, -1)
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        # Signals wake the loop through a socket pair: SIGCHLD reports a status at once (it is
        # on every push's critical path), SIGTERM stops accepting.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        self.selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)

    def _on_stop(self, *_args) -> None:
        self.stopping = True

    # --- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        log.info("ssh gateway listening on %s", self.socket_path)
        print(f"ssh gateway: listening on {self.socket_path}", flush=True)
        self._make_spare()
        while not self.stopping:
            for key, _events in self.selector.select(timeout=5.0):
                if key.data == "accept":
                    self._accept()
                else:
                    with contextlib.suppress(BlockingIOError):
                        while self._wake_r.recv(512):
                            pass
            self._reap()
        self._drain()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            try:
                self._handle(conn)
            except Exception:
                log.exception("ssh gateway: request failed")
                conn.close()

    def _handle(self, conn: socket.socket) -> None:
        uid = peer_uid(conn)
        if uid not in self.allowed_uids:
            log.warning("ssh gateway: refused a connection from uid %s", uid)
            conn.close()
            return
        conn.settimeout(REQUEST_TIMEOUT)
        data, fds, _flags, _addr = socket.recv_fds(conn, HEADER_MAX, 3)
        try:
            request = json.loads(data)
        except ValueError:
            request = {}
        op = request.get("op") if isinstance(request, dict) else None
        if op == "session" and len(fds) == 3:
            self._session(conn, request, fds)
            return
        for fd in fds:
            os.close(fd)
        if op == "key":
            conn.sendall(self._lookup(str(request.get("fingerprint", ""))).encode() + b"\n")
        conn.close()

    def _lookup(self, fingerprint: str) -> str:
        """`<id> <type> <base64 blob>` of the usable key, or "" (hostsite-keys parses it without
        the json module, whose import would cost it ~6 ms)."""
        try:
            key = usable_key(fingerprint)
        except DatabaseError:
            # A connection the database dropped while idle (a restart, a timeout): once more.
            connections.close_all()
            key = usable_key(fingerprint)
        if key is None or " " in key.key_type + key.key_data:
            return ""
        return f"{key.pk} {key.key_type} {key.key_data}"

    def _session(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        if self.stopping:
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        spare, self.spare = self.spare, None
        if spare is not None and spares.hand_over(spare, conn, request, fds):
            pid = spare.pid
        else:
            # No spare ready (the first session, or it died): fork one for this session now.
            # The parent keeps its database connection across forks (a reconnect would cost
            # every key look-up after a session 2-10 ms); the child sets its copy aside unused.
            pid = os.fork()
            if pid == 0:
                self._forget_parent()
                spares.run_session(self.serve, conn, request, fds)  # never returns
        for fd in fds:
            os.close(fd)
        conn.setblocking(True)
        self.sessions[pid] = conn
        self._make_spare()

    def _make_spare(self) -> None:
        """The next session's process, forked and warmed now, while nobody waits on it."""
        if self.spare is None and not self.stopping and self.spares:
            self.spare = spares.fork_spare(self._forget_parent, self.serve)

    def _forget_parent(self) -> None:
        """In a child: the gateway's sockets, signals and database connections are not its."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        spares.set_aside_inherited_connections()
        self.selector.close()
        self.listener.close()
        self._wake_r.close()
        self._wake_w.close()
        for other in self.sessions.values():
            other.close()
        if self.spare is not None:
            self.spare.sock.close()

    def _reap(self) -> None:
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.sessions.pop(pid, None)
            if conn is None:
                if self.spare is not None and self.spare.pid == pid:
                    self.spare = None  # died waiting; the next session forks its own
                continue
            with contextlib.suppress(OSError):
                conn.sendall(f"{exit_status(wait_status)}\n".encode())
            conn.close()

    def _drain(self) -> None:
        """Stopped: accept nothing new, give running sessions drain_timeout seconds."""
        self.selector.unregister(self.listener)
        self.listener.close()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        if self.spare is not None:
            self.spare.sock.close()  # it exits on the end of its socket
            self.spare = None
        deadline = time.monotonic() + self.drain_timeout
        if self.sessions:
            print(f"ssh gateway: waiting for {len(self.sessions)} session(s)", flush=True)
        while self.sessions and time.monotonic() < deadline:
            self.selector.select(timeout=0.2)
            with contextlib.suppress(BlockingIOError):
                while self._wake_r.recv(512):
                    pass
            self._reap()
        for pid in list(self.sessions):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while self.sessions:
            time.sleep(0.05)
            self._reap()
        print("ssh gateway: stopped", flush=True)
