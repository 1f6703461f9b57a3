"""The one git runner. Every git process of the platform starts here.

argv lists only (never a shell), a minimal environment so no user or system configuration
leaks in, a time limit, and a typed error that carries stderr (Kallithea's
_run_git_command, Weblate's RepositoryException).
"""

from __future__ import annotations

import functools
import io
import os
import re
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

from django.conf import settings

from hostsite.errors import InvalidInput

# Transports git may use when it fetches from a URL we were given (imports). `ext::` runs
# arbitrary commands and is never allowed.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"


@dataclass(frozen=True)
class GitResult:
    args: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


class GitError(Exception):
    def __init__(self, args: Sequence[str], returncode: int, stderr: bytes | str):
        self.git_args = tuple(args)
        self.returncode = returncode
        self.stderr = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
        super().__init__(f"git {' '.join(self.git_args)} exited {returncode}: {self.stderr.strip()[:2000]}")


class GitTimeout(GitError):
    pass


class InvalidGitArgument(InvalidInput):
    """Input that cannot be handed to git at all (a NUL byte: no argv or ref can hold one).
    Raised by the runner itself, whichever view or task let the input through: as invalid
    input, so every form shows it and every handler of InvalidInput catches it."""

    code = "invalid"


def git_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: nothing from the caller's git, HOME or locale leaks into git."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(settings.VAR_DIR / "git-home"),
        "LANG": "C",
        "LC_ALL": "C",
        "TZ": "UTC",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "GIT_AUTHOR_NAME": "hostsite",
        "GIT_AUTHOR_EMAIL": "hostsite@localhost",
        "GIT_COMMITTER_NAME": "hostsite",
        "GIT_COMMITTER_EMAIL": "hostsite@localhost",
    }
    if extra:
        if any("\0" in str(value) for value in extra.values()):
            raise InvalidGitArgument("The input contains a NUL character.")
        env.update(extra)
    return env


def _argv(args: Sequence[str], repo: Path | str | None) -> list[str]:
    argv = [settings.GIT_BINARY]
    if repo is not None:
        argv += ["--git-dir", str(repo)]
    argv += [str(a) for a in args]
    # No argv can carry a NUL (the kernel's strings end there; subprocess raises ValueError):
    # input that holds one is the caller's bad input, answered 400, never a 500.
    if any("\0" in a for a in argv):
        raise InvalidGitArgument("The input contains a NUL character.")
    return argv


def run_git(
    args: Sequence[str],
    *,
    repo: Path | str | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    show_progress: bool = False,
) -> GitResult:
    """Run git to completion. Raises GitError on a non-zero exit (unless check=False).

    show_progress lets git's stderr through to ours (used by `manage.py repo create --import`
    so an operator sees git's progress meter); stderr is then not captured.
    """
    argv = _argv(args, repo)
    try:
        proc = subprocess.run(
            argv,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None if show_progress else subprocess.PIPE,
            # Nothing reads the output before git exits: without GIT_FLUSH=0, rev-list and log
            # write to a pipe one commit at a time (a write per commit, and a wake-up of ours
            # per write). A 50,000-commit rev-list cost 135 ms of git's CPU and 42 ms of ours
            # that way, 90 ms and 8 ms without.
            env=git_environment({"GIT_FLUSH": "0", **(env or {})}),
            timeout=timeout or settings.GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitTimeout(args, -9, f"timed out after {exc.timeout}s") from None
    result = GitResult(tuple(str(a) for a in args), proc.returncode, proc.stdout, proc.stderr or b"")
    if check and proc.returncode != 0:
        raise GitError(args, proc.returncode, result.stderr)
    return result


def popen_git(
    args: Sequence[str],
    *,
    repo: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
) -> subprocess.Popen:
    """A bare child process, for callers that hand it to a response object which owns its end
    (gitcore.gitstream); everything else streams through stream_git."""
    return subprocess.Popen(
        _argv(args, repo), stdin=stdin, stdout=stdout, stderr=stderr, env=git_environment(env)
    )


def piped(stream: IO[bytes] | None) -> IO[bytes]:
    """A child's pipe that the caller asked for (subprocess types every pipe as Optional)."""
    if stream is None:
        raise ValueError("this stream of git was not opened as a pipe")
    return stream


class GitStream:
    """A running git whose output the caller streams (stream_git): its pipes are the caller's to
    read and write, its end is not."""

    def __init__(self, proc: subprocess.Popen, args: Sequence[str], timeout: float):
        self.proc = proc
        self.args = tuple(str(a) for a in args)
        self.timeout = timeout
        self.timed_out = False

    @property
    def stdin(self) -> IO[bytes]:
        return piped(self.proc.stdin)

    @property
    def stdout(self) -> io.BufferedReader:
        # Popen buffers a piped stdout (bufsize -1): read1() returns what is there.
        return cast(io.BufferedReader, piped(self.proc.stdout))

    @property
    def stderr(self) -> IO[bytes]:
        return piped(self.proc.stderr)

    def _expire(self) -> None:
        if self.proc.poll() is None:
            self.timed_out = True
            self.proc.kill()

    def wait(self) -> int:
        """Wait for git to exit (the deadline still applies) and return its exit status."""
        return self.proc.wait()

    def check(self, stderr: bytes = b"") -> None:
        """Wait for git, then raise GitTimeout if the deadline killed it, or GitError if it
        failed. `stderr` is what the caller read of it, if it read it; an unread stderr pipe is
        read here."""
        returncode = self.wait()
        if self.timed_out:
            raise GitTimeout(self.args, -9, f"timed out after {self.timeout}s")
        if returncode != 0:
            if not stderr and self.proc.stderr is not None and not self.proc.stderr.closed:
                stderr = self.proc.stderr.read()
            raise GitError(self.args, returncode, stderr)


@contextmanager
def stream_git(
    args: Sequence[str],
    *,
    repo: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    timeout: float | None = None,
) -> Iterator[GitStream]:
    """git whose output is streamed, with a deadline: killed when the deadline passes, and
    always killed (if still running) and reaped when the block exits, however it exits
    (a client that went away, an exception, a generator closed early).

        with stream_git(["archive", "--format=tar", sha], repo=path) as git:
            for chunk in iter(lambda: git.stdout.read(65536), b""):
                yield chunk
            git.check()  # GitError / GitTimeout on failure
    """
    limit = timeout or settings.GIT_TIMEOUT
    proc = popen_git(args, repo=repo, env=env, stdin=stdin, stdout=stdout, stderr=stderr)
    stream = GitStream(proc, args, limit)
    timer = threading.Timer(limit, stream._expire)
    timer.daemon = True
    timer.start()
    try:
        yield stream
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()
        proc.wait()


@functools.cache
def git_version() -> tuple[int, int, int]:
    out = run_git(["version"]).text  # "git version 2.39.5" or "git version 2.47.1.windows.1"
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if not match:
        raise GitError(["version"], 0, f"cannot parse {out!r}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def supports_reftable() -> bool:
    """`git init --ref-format=reftable` exists from git 2.45."""
    return git_version() >= (2, 45, 0)


def is_valid_refname(ref: str) -> bool:
    """git check-ref-format, the authority on what a ref may be called."""
    if not ref or len(ref.encode()) > 255 or any(ord(c) < 0x20 or ord(c) == 0x7F for c in ref):
        return False
    return run_git(["check-ref-format", ref], check=False).returncode == 0
