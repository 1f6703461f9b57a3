"""Running git for an HTTP request: the request body copied into git's stdin by a feeder
thread, git's stdout relayed as a streaming response, and git always reaped.

When the client goes away, gunicorn closes the response and GitProcessResponse.close() kills
git (Weblate's gitexport does the same), except for a push whose body arrived whole: that
one is allowed to finish, so the refs it updates and their record cannot part ways.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import subprocess
import threading
from typing import BinaryIO

from django.conf import settings
from django.http import StreamingHttpResponse

from gitcore.git import piped

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
# git's output is relayed in large reads from a large pipe: fewer syscalls and fewer trips
# through the WSGI server per MiB of a clone (bench/smart_http.py measures the effect).
OUT_CHUNK = 1024 * 1024
F_SETPIPE_SZ = 1031  # Linux fcntl; absent elsewhere, where the default pipe size stays


class Feeder(threading.Thread):
    """Copies the request body into git's stdin; kills git if the client's body breaks off."""

    def __init__(self, proc: subprocess.Popen, prefix: bytes, body: BinaryIO):
        super().__init__(daemon=True, name=f"git-feeder-{proc.pid}")
        self.proc = proc
        self.prefix = prefix
        self.body = body
        self.error: BaseException | None = None

    def run(self) -> None:
        stdin = piped(self.proc.stdin)
        try:
            # Flushed after every write: over SSH the client keeps its side open after a
            # push that sends no pack (only deletions) and waits for the report, so bytes left
            # in the pipe's buffer would never reach git (bench/ssh.py hung on one).
            if self.prefix:
                stdin.write(self.prefix)
                stdin.flush()
            while True:
                chunk = self.body.read(CHUNK)
                if not chunk:
                    break
                stdin.write(chunk)
                stdin.flush()
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


# As git http-backend sends them: advertisements and results are never cached.
NO_CACHE_HEADERS = {
    "Cache-Control": "no-cache, max-age=0, must-revalidate",
    "Pragma": "no-cache",
    "Expires": "Fri, 01 Jan 1980 00:00:00 GMT",
}


class GitProcessResponse(StreamingHttpResponse):
    """Streams git's stdout; close() always reaps git, and kills it first if it still runs
    (the client went away). `on_exit(returncode, bytes_sent)` runs once git is gone. A `relay`
    (smart HTTP passes repos.sideband.FsckRelay) sees every chunk on its way out and may add to it.
    `before_end()` runs when git's output ends, before the relay's last packet (the final
    flush) goes out: a push is recorded there, and the note it returns, if any, reaches the
    client on band 2. The client now waits for the recording (a few milliseconds: the push's
    commits are listed and its rows written), which used to run after the response ended;
    that is the price of telling the client when its record is delayed."""

    def __init__(
        self,
        proc,
        *,
        content_type: str,
        prefix: bytes = b"",
        feeder=None,
        on_exit=None,
        stderr_file=None,
        finish_when_abandoned: bool = False,
        relay=None,
        before_end=None,
    ):
        self._proc = proc
        self._prefix = prefix
        self._relay = relay
        self._before_end = before_end
        self._feeder = feeder
        self._on_exit = on_exit
        self._stderr_file = stderr_file
        self._finish_when_abandoned = finish_when_abandoned
        self._done = False
        self.bytes_sent = 0
        _grow_pipe(proc.stdout)
        super().__init__(self._stream(prefix), content_type=content_type)
        for name, value in NO_CACHE_HEADERS.items():
            self[name] = value

    @property
    def proc(self) -> subprocess.Popen:
        return self._proc

    @property
    def passes_through(self) -> bool:
        """Whether the body is exactly git's stdout (nothing before, beside or after it), so a
        caller may move git's output itself and set bytes_sent before close()."""
        return not self._prefix and self._relay is None and self._before_end is None

    def _stream(self, prefix: bytes):
        if prefix:
            yield prefix
        read = self._proc.stdout.read1
        relay = self._relay
        while True:
            chunk = read(OUT_CHUNK)
            if not chunk:
                break
            if relay is not None:
                chunk = relay.feed(chunk)
                if not chunk:
                    continue  # the start of a packet, held until the rest arrives
            self.bytes_sent += len(chunk)
            yield chunk
        note = self._before_end() if self._before_end is not None else b""
        if relay is not None and (tail := relay.finish(note or b"")):
            self.bytes_sent += len(tail)
            yield tail
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
                    drain = threading.Thread(target=_drain, args=(proc.stdout, self._relay), daemon=True)
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


def _drain(pipe, relay=None) -> None:
    # Through the relay still, so the fsck messages of a push that completes are all read.
    try:
        while chunk := pipe.read(CHUNK):
            if relay is not None:
                relay.feed(chunk)
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
