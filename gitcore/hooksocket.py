"""The application's side of git's hooks: a local socket that the hook scripts
(gitcore/hookclient.py) send their input to, answered in the process that started the push.

Why: a push's decision needs who pushes, their role and the repository's rules, which the
process serving the request already holds. A hook process that decided on its own had them
copied into environment variables and re-read them (and booting the application per push
costs hundreds of milliseconds). Here the hook relays; the handler the pipeline registered for
this push answers, in the same process, with the same code the web writes ask.

One listener per process, started by the first push it serves (a forked child starts its own:
the SSH gateway forks a session per connection). The socket is abstract (no file to leave
behind) and answers only its own uid (SO_PEERCRED); each push is known by a random token that
lives while git runs. A connection is served on its own thread, with git's GIT_* variables
(the quarantine of the pushed objects) in the environment its git commands run in.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger(__name__)

ENV_SOCKET = "HOSTSITE_HOOK_SOCKET"
ENV_TOKEN = "HOSTSITE_HOOK_TOKEN"  # noqa: S105 - a variable's name, not a secret
HEADER_MAX = 1024 * 1024
# A connected hook sends its header at once; one that does not is dropped after this long.
HEADER_TIMEOUT = 10.0
_PEERCRED = struct.Struct("3i")


class HookOutput:
    """A hook's stdout (binary) or stderr (text), sent to the client as frames."""

    def __init__(self, conn: socket.socket, kind: bytes, lock: threading.Lock) -> None:
        self._conn, self._kind, self._lock = conn, kind, lock
        self._buffer = bytearray()

    def write(self, data: bytes | str) -> int:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        self._buffer += data
        if self._kind == b"2":  # stderr is unbuffered, as git relays it line by line
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self._buffer:
            send_frame(self._conn, self._kind, bytes(self._buffer), self._lock)
            self._buffer.clear()


@dataclass
class HookCall:
    """One run of a hook, as its handler sees it."""

    hook: str
    args: list[str]
    env: dict[str, str]  # the push's, and git's GIT_* for the hook
    repository: Path
    stdin: BinaryIO
    stdout: HookOutput
    stderr: HookOutput


Handler = Callable[[HookCall], int]


@dataclass(frozen=True)
class _Push:
    repository: Path
    env: Mapping[str, str]
    handlers: Mapping[str, Handler]


class _Listener:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.name = f"hostsite-hooks-{self.pid}-{secrets.token_hex(8)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind("\0" + self.name)
        self.sock.listen(64)
        threading.Thread(target=self._accept, name="hook-listener", daemon=True).start()

    @property
    def address(self) -> str:
        return "@" + self.name

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                log.exception("the hook socket stopped accepting")
                return
            threading.Thread(target=_serve, args=(conn,), name="hook", daemon=True).start()


_lock = threading.Lock()
_listener: _Listener | None = None
_pushes: dict[str, _Push] = {}


def _current() -> _Listener:
    global _listener, _pushes
    with _lock:
        if _listener is None or _listener.pid != os.getpid():
            # A fork inherits the parent's state but not its listening thread.
            _listener, _pushes = _Listener(), {}
        return _listener


def register(repository: Path, env: Mapping[str, str], handlers: Mapping[str, Handler]) -> dict[str, str]:
    """Until unregister(), hooks started with the returned variables reach `handlers` (by hook
    name) with `env`, the environment git was started in (git's GIT_* variables for the hook
    are added to it; PATH is this process's unless `env` has one)."""
    listener = _current()
    token = secrets.token_hex(16)
    with _lock:
        _pushes[token] = _Push(repository, dict(env), dict(handlers))
    return {ENV_SOCKET: listener.address, ENV_TOKEN: token}


def unregister(variables: Mapping[str, str]) -> None:
    with _lock:
        _pushes.pop(variables.get(ENV_TOKEN, ""), None)


@contextlib.contextmanager
def open_push(repository: Path, env: Mapping[str, str], handlers: Mapping[str, Handler]) -> Iterator[dict]:
    variables = register(repository, env, handlers)
    try:
        yield variables
    finally:
        unregister(variables)


def send_frame(conn: socket.socket, kind: bytes, body: bytes, lock: threading.Lock) -> None:
    with lock:
        conn.sendall(kind + struct.pack(">I", len(body)) + body)


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 65536))
        if not chunk:
            raise EOFError("the hook closed its connection")
        data += chunk
    return bytes(data)


def _read_header(conn: socket.socket) -> tuple[str, str, list[str], dict[str, str]]:
    (size,) = struct.unpack(">I", _read_exactly(conn, 4))
    if size > HEADER_MAX:
        raise ValueError(f"a header of {size} bytes")
    fields = [f.decode("utf-8", "surrogateescape") for f in _read_exactly(conn, size).split(b"\0")]
    token, hook, count = fields[0], fields[1], int(fields[2])
    args, rest = fields[3 : 3 + count], fields[3 + count :]
    git_env = {}
    for item in rest:
        key, sep, value = item.partition("=")
        if sep and key.startswith("GIT_"):
            git_env[key] = value
    return token, hook, args, git_env


def _serve(conn: socket.socket) -> None:
    lock = threading.Lock()
    code = 1
    try:
        _pid, uid, _gid = _PEERCRED.unpack(
            conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        )
        if uid != os.getuid():
            conn.close()  # not a word to another user's process; its hook fails closed
            return
        conn.settimeout(HEADER_TIMEOUT)
        token, hook, args, git_env = _read_header(conn)
        conn.settimeout(None)
        with _lock:
            push = _pushes.get(token)
        handler = push.handlers.get(hook) if push is not None else None
        stdout, stderr = HookOutput(conn, b"1", lock), HookOutput(conn, b"2", lock)
        if push is None or handler is None:
            stderr.write(f"hostsite: the platform knows no push for this {hook} hook; nothing changed\n")
            return
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **push.env, **git_env}
        env["GIT_DIR"] = str(push.repository)
        with conn.makefile("rb") as stdin:
            call = HookCall(hook, args, env, push.repository, stdin, stdout, stderr)
            try:
                code = handler(call)
            except Exception as exc:
                log.exception("the %s hook's handler failed", hook)
                stderr.write(
                    f"hostsite: the {hook} hook failed ({type(exc).__name__}); nothing more was changed\n"
                )
                code = 1
            stdout.flush()
    except (OSError, EOFError, ValueError, IndexError, struct.error):
        log.warning("a hook connection ended before its answer", exc_info=True)
    finally:
        with contextlib.suppress(OSError):
            send_frame(conn, b"x", str(code).encode(), lock)
        conn.close()
