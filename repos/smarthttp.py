"""Git smart HTTP: run upload-pack / receive-pack with --stateless-rpc and stream both ways.

Nothing holds a pack in memory: a request body is copied into git's stdin by a feeder thread
in 64 KiB chunks while the response iterates git's stdout. Bodies are checked before git
starts: the pkt-line framing of an upload-pack request and of a push's command list, and the
inflated size of a gzip body (which is spooled to a temporary file, so a gzip bomb gets a
clear 413 rather than a broken 200). When the client goes away, gunicorn closes the response
and GitProcessResponse.close() kills and reaps git (Weblate's gitexport does the same).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import subprocess
import tempfile
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.http import StreamingHttpResponse

from repos import extensions, pktline, pushes, transfers
from repos.git import popen_git
from repos.models import Repository, Role

log = logging.getLogger(__name__)

SERVICES = {"git-upload-pack": "upload-pack", "git-receive-pack": "receive-pack"}
CHUNK = 64 * 1024
# git's output is relayed in large reads from a large pipe: fewer syscalls and fewer trips
# through the WSGI server per MiB of a clone (bench/smart_http.py measures the effect).
OUT_CHUNK = 1024 * 1024
F_SETPIPE_SZ = 1031  # Linux fcntl; absent elsewhere, where the default pipe size stays
# Git-Protocol is `version=2` plus optional `:`-separated key=value pairs; nothing else gets
# through to git's environment.
_PROTOCOL_RE = re.compile(r"^[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?(:[A-Za-z0-9._-]+(=[A-Za-z0-9._-]*)?)*$")


class GitHTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Pusher:
    """Who is talking to git, decided by the view before git starts."""

    user: object | None
    role: Role | None
    can_read: bool = True

    @property
    def role_label(self) -> str:
        """The role the hooks see: signed-in users who may read a public repository without
        being members are readers."""
        if self.role is not None:
            return self.role.label
        return Role.READER.label if self.user is not None and self.can_read else ""


def parse_git_protocol(value: str | None) -> str | None:
    if not value:
        return None
    if len(value) > 256 or not _PROTOCOL_RE.match(value):
        raise GitHTTPError(400, "invalid Git-Protocol header")
    return value


def wants_v2(protocol: str | None) -> bool:
    return bool(protocol) and "version=2" in protocol.split(":")


def repository_dir(repo: Repository) -> Path:
    """The repository's directory, refusing anything that resolves outside REPO_ROOT (a
    symlink planted inside it, say)."""
    path = repo.disk_path
    root = Path(settings.REPO_ROOT).resolve()
    resolved = path.resolve()
    if resolved.parent.parent != root or not (resolved / "HEAD").is_file():
        log.error("refusing to serve %s: %s resolves to %s", repo.full_name, path, resolved)
        raise GitHTTPError(404, "Repository not found")
    return resolved


# --- request bodies ----------------------------------------------------------------------------


class GzipReader:
    """Inflate a gzip stream incrementally, refusing to produce more than `limit` bytes."""

    def __init__(self, raw: BinaryIO, limit: int):
        self._raw = raw
        self._limit = limit
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = b""
        self._produced = 0
        self._eof = False

    def read(self, n: int = CHUNK) -> bytes:
        while not self._buffer and not self._eof:
            data = self._inflater.unconsumed_tail or self._raw.read(CHUNK)
            if not data:
                self._eof = True
                if not self._inflater.eof:
                    raise GitHTTPError(400, "truncated gzip request body")
                break
            try:
                out = self._inflater.decompress(data, CHUNK)
            except zlib.error:
                raise GitHTTPError(400, "invalid gzip request body") from None
            self._produced += len(out)
            if self._produced > self._limit:
                raise GitHTTPError(
                    413, f"request body inflates to more than {self._limit // (1024 * 1024)} MiB"
                )
            self._buffer = out
            if self._inflater.eof:
                self._eof = True
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out


def spool(stream: BinaryIO, *, limit: int, what: str) -> BinaryIO:
    """Copy a stream into a temporary file (memory up to 1 MiB), at most `limit` bytes."""
    spooled = tempfile.SpooledTemporaryFile(max_size=1024 * 1024)  # noqa: SIM115 - returned
    total = 0
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        if total > limit:
            spooled.close()
            raise GitHTTPError(413, f"{what} is larger than {limit // (1024 * 1024)} MiB")
        spooled.write(chunk)
    spooled.seek(0)
    return spooled


@dataclass(frozen=True)
class PreparedBody:
    prefix: bytes  # already read from the request, goes to git first
    rest: BinaryIO  # the remainder of the request body
    commands: list[tuple[str, str, str]]  # a push's (old, new, ref) commands


def prepare_body(service: str, raw: BinaryIO, *, gzip: bool, protocol: str | None) -> PreparedBody:
    """Validate a request body before git sees it."""
    if gzip:
        raw = spool(GzipReader(raw, settings.GIT_HTTP_MAX_INFLATED), limit=settings.GIT_HTTP_MAX_INFLATED,
                    what="inflated request body")
    try:
        if service == "upload-pack":
            body = raw if gzip else spool(raw, limit=settings.GIT_HTTP_MAX_UPLOAD_REQUEST, what="fetch request")
            pktline.validate_upload_request(body, protocol_v2=wants_v2(protocol))
            body.seek(0)
            return PreparedBody(b"", body, [])
        prefix, commands = pktline.read_receive_commands(raw)
        return PreparedBody(prefix, raw, commands)
    except pktline.PktLineError as exc:
        raise GitHTTPError(400, f"malformed request: {exc}") from None


# --- processes ---------------------------------------------------------------------------------


class Feeder(threading.Thread):
    """Copies the request body into git's stdin; kills git if the client's body breaks off."""

    def __init__(self, proc: subprocess.Popen, prefix: bytes, body: BinaryIO):
        super().__init__(daemon=True, name=f"git-feeder-{proc.pid}")
        self.proc = proc
        self.prefix = prefix
        self.body = body
        self.error: BaseException | None = None

    def run(self) -> None:
        stdin = self.proc.stdin
        try:
            if self.prefix:
                stdin.write(self.prefix)
            while True:
                chunk = self.body.read(CHUNK)
                if not chunk:
                    break
                stdin.write(chunk)
        except BrokenPipeError:
            pass  # git stopped reading (it refused the push, or was killed): its output says why
        except BaseException as exc:
            self.error = exc
            log.info("request body broke off (%s); stopping git %s", exc, self.proc.pid)
            _kill(self.proc)
        finally:
            with contextlib.suppress(OSError):
                stdin.close()
            close = getattr(self.body, "close", None)
            if close:
                close()


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


class GitProcessResponse(StreamingHttpResponse):
    """Streams git's stdout; close() always reaps git, and kills it first if it still runs
    (the client went away). `on_exit(returncode, bytes_sent)` runs once git is gone."""

    def __init__(self, proc, *, content_type: str, prefix: bytes = b"", feeder=None, on_exit=None,
                 stderr_file=None, finish_when_abandoned: bool = False):
        self._proc = proc
        self._feeder = feeder
        self._on_exit = on_exit
        self._stderr_file = stderr_file
        self._finish_when_abandoned = finish_when_abandoned
        self._done = False
        self.bytes_sent = 0
        _grow_pipe(proc.stdout)
        super().__init__(self._stream(prefix), content_type=content_type)
        self["Cache-Control"] = "no-cache, max-age=0, must-revalidate"
        self["Pragma"] = "no-cache"
        self["Expires"] = "Fri, 01 Jan 1980 00:00:00 GMT"

    def _stream(self, prefix: bytes):
        if prefix:
            yield prefix
        read = self._proc.stdout.read1
        while True:
            chunk = read(OUT_CHUNK)
            if not chunk:
                break
            self.bytes_sent += len(chunk)
            yield chunk
        self._finish(abandoned=False)

    def close(self):
        try:
            self._finish(abandoned=True)
        finally:
            super().close()

    def _finish(self, *, abandoned: bool) -> None:
        if self._done:
            return
        self._done = True
        proc = self._proc
        try:
            if abandoned and proc.poll() is None:
                if self._finish_when_abandoned:
                    # If the whole push arrived, let receive-pack finish, so the refs it updates
                    # and the record of them (post-receive) cannot part ways. Its output goes
                    # nowhere, but must still be read or it would block.
                    drain = threading.Thread(target=_drain, args=(proc.stdout,), daemon=True)
                    drain.start()
                    if not self._body_complete():
                        _kill(proc)
                    drain.join(timeout=settings.GIT_HTTP_TIMEOUT)
                else:
                    _kill(proc)  # the client went away; git's work is for nobody
            try:
                proc.wait(timeout=settings.GIT_HTTP_TIMEOUT)
            except subprocess.TimeoutExpired:
                _kill(proc)
                proc.wait()
            if self._feeder is not None:
                self._feeder.join(timeout=30)
            if proc.returncode != 0:
                log.info("git exited %s: %s", proc.returncode, _stderr_text(self._stderr_file))
        finally:
            for pipe in (proc.stdout, proc.stdin):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            if self._stderr_file is not None:
                self._stderr_file.close()
            if self._on_exit is not None:
                self._on_exit(proc.returncode, self.bytes_sent)

    def _body_complete(self) -> bool:
        feeder = self._feeder
        if feeder is None:
            return True
        feeder.join(timeout=settings.GIT_HTTP_TIMEOUT)
        return feeder.error is None


def _drain(pipe) -> None:
    try:
        while pipe.read(CHUNK):
            pass
    except (OSError, ValueError):
        pass


def _grow_pipe(pipe) -> None:
    # Not Linux, or above /proc/sys/fs/pipe-max-size: the default size works too.
    with contextlib.suppress(OSError):
        fcntl.fcntl(pipe.fileno(), F_SETPIPE_SZ, OUT_CHUNK)


def _stderr_text(fh) -> str:
    if fh is None:
        return ""
    try:
        fh.seek(0)
        return fh.read(4000).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return ""


def _service_argv(service: str, path: Path, *, advertise: bool, config: list[tuple[str, str]]) -> list[str]:
    argv = []
    if service == "receive-pack":
        argv += ["-c", f"receive.maxInputSize={settings.GIT_MAX_PUSH_SIZE}"]
    for key, value in config:
        argv += ["-c", f"{key}={value}"]
    argv += [service, "--stateless-rpc"]
    if advertise:
        argv.append("--advertise-refs")
    argv.append(str(path))
    return argv


def _hook_env(repo: Repository, pusher: Pusher, updates_file: str, commands) -> dict[str, str]:
    role = pusher.role_label
    return {
        **extensions.hook_environment(repo, pusher.user, role, commands),
        "HOSTSITE_PUSHER": pusher.user.username,
        "HOSTSITE_ROLE": role,
        "HOSTSITE_REPO_ID": str(repo.pk),
        "HOSTSITE_REF_UPDATES_FILE": updates_file,
    }


def advertise(repo: Repository, service: str, pusher: Pusher, protocol: str | None) -> GitProcessResponse:
    path = repository_dir(repo)
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    config = extensions.git_config(repo, pusher.user, pusher.role_label, service=service, advertise=True,
                                   refs=None)
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(_service_argv(service, path, advertise=True, config=config), env=env,
                     stdin=subprocess.DEVNULL, stderr=stderr)
    # v0/v1 advertisements start with the service line, as git http-backend writes it; in v2
    # the capability advertisement stands alone.
    prefix = b""
    if not wants_v2(protocol) or service == "receive-pack":
        prefix = pktline.encode(f"# service=git-{service}\n") + pktline.FLUSH
    return GitProcessResponse(
        proc, content_type=f"application/x-git-{service}-advertisement", prefix=prefix, stderr_file=stderr
    )


def rpc(repo: Repository, service: str, pusher: Pusher, *, body: BinaryIO, gzip: bool,
        protocol: str | None) -> GitProcessResponse:
    path = repository_dir(repo)
    # Push is always protocol v0 (git has no v2 push); GIT_PROTOCOL only matters for fetch.
    protocol = protocol if service == "upload-pack" else None
    prepared = prepare_body(service, body, gzip=gzip, protocol=protocol)
    commands = prepared.commands
    env = {"GIT_PROTOCOL": protocol} if protocol else {}
    on_exit = None
    if service == "receive-pack":
        fd, updates_path = tempfile.mkstemp(prefix="hostsite-push-", suffix=".refs")
        os.close(fd)
        env.update(_hook_env(repo, pusher, updates_path, commands))

        def on_exit(returncode: int, _sent: int) -> None:
            try:
                text = Path(updates_path).read_text(encoding="utf-8", errors="replace")
            finally:
                os.unlink(updates_path)
            # Whatever post-receive wrote did happen, even if the client left afterwards:
            # record it. A push git rejected wrote nothing and records nothing.
            updates = pushes.parse_updates(text)
            if updates:
                pushes.push_record(repo=repo, pusher=pusher.user, updates=updates, protocol="http")

    refs = [ref for _old, _new, ref in commands] if service == "receive-pack" else None
    config = extensions.git_config(repo, pusher.user, pusher.role_label, service=service, advertise=False,
                                   refs=refs)
    if service == "upload-pack":
        def on_exit(_returncode: int, sent: int) -> None:
            # The origin's share of clone and fetch traffic, for the offload figure.
            transfers.add(repo.pk, git_bytes=sent, git_requests=1)

    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    proc = popen_git(_service_argv(service, path, advertise=False, config=config), env=env, stderr=stderr)
    feeder = Feeder(proc, prepared.prefix, prepared.rest)
    feeder.start()
    return GitProcessResponse(
        proc, content_type=f"application/x-git-{service}-result", feeder=feeder, on_exit=on_exit,
        stderr_file=stderr, finish_when_abandoned=service == "receive-pack",
    )
