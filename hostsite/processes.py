"""Child processes for `make run`, the live tests and the benchmarks: start one in its own
process group with its output in a log file, wait until it answers HTTP, stop it, and
supervise a set of them with restart and backoff.

Stdlib only, and nothing here imports Django: `make run` must not boot settings before its
children do (their errors name the missing variable), and the benchmarks import this as a
plain library.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

# A direct opener: loopback readiness checks must never go through an HTTP(S)_PROXY.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class StartupError(RuntimeError):
    """A child exited, or did not answer, before it was ready; the message has its log tail."""


def die_with_parent() -> None:
    """preexec_fn: SIGTERM the child when the thread that started it dies, however it dies
    (Linux PR_SET_PDEATHSIG), so a SIGKILLed supervisor leaves nothing behind."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def web_argv(python: str, base_dir: Path) -> list[str]:
    """The web server as `make run` starts it (gunicorn with the project's config)."""
    return [
        python,
        "-m",
        "gunicorn",
        "-c",
        str(base_dir / "hostsite" / "gunicorn_conf.py"),
        "hostsite.wsgi:application",
    ]


def celery_argv(python: str, command: str, *options: str) -> list[str]:
    """A Celery `worker` or `beat` of the hostsite app, logging at INFO."""
    return [python, "-m", "celery", "-A", "hostsite", command, "--loglevel", "INFO", *options]


def how_it_ended(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class Child:
    """One program in a process group of its own (a Ctrl-C to the terminal reaches only the
    supervisor, which then stops each child in order), its output in `log_path` when given,
    else inherited. With `pipes`, stdin and stdout are text pipes to talk to it."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        log_path: Path | None = None,
        append: bool = False,
        stdin: int | None = None,
        pipes: bool = False,
        parent_death: bool = True,
    ):
        self.name = name
        self.log_path = log_path
        self._log: IO[bytes] | None = None
        if log_path is not None:
            self._log = open(log_path, "ab" if append else "wb")  # noqa: SIM115 - closed in stop()
        # pipes: a line protocol on stdin/stdout (text), only stderr to the log.
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE if pipes else stdin,
            stdout=subprocess.PIPE if pipes else self._log,
            stderr=self._log if pipes else (subprocess.STDOUT if self._log else None),
            text=pipes,
            start_new_session=True,
            preexec_fn=die_with_parent if parent_death else None,
        )
        self.started = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()

    def log(self, limit: int = 8000) -> str:
        if self.log_path is None:
            return ""
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def logged(self, text: str) -> bool:
        # The whole log: a worker draining a backlog pushes its "ready." out of log()'s tail.
        return self.log_path is not None and text in self.log_path.read_text(errors="replace")

    def terminate(self, *, group: bool = False) -> None:
        """SIGTERM the leader, or its whole group. gunicorn's master and Celery's main process
        stop their own workers gracefully: signalling the group would kill those mid-task."""
        if self.proc.poll() is None:
            if group:
                signal_group(self.proc, signal.SIGTERM)
            else:
                self.proc.terminate()

    def reap(self, grace: float) -> None:
        """Wait up to `grace` seconds, then SIGKILL whatever is left of the group (workers,
        pool processes, forked daemons) and reap the leader."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(max(0.1, grace))
        signal_group(self.proc, signal.SIGKILL)
        self.proc.wait()
        if self._log is not None:
            self._log.close()

    def stop(self, timeout: float = 20.0, *, group: bool = False) -> None:
        self.terminate(group=group)
        self.reap(timeout)


def stop_all(children: Iterable[Child], grace: float, *, group: bool = False) -> None:
    """Stop several children within one shared grace period, all signalled first."""
    children = list(children)
    for child in children:
        child.terminate(group=group)
    deadline = time.monotonic() + grace
    for child in children:
        child.reap(deadline - time.monotonic())


def _exited(watch: Iterable[Child | subprocess.Popen]) -> Child | subprocess.Popen | None:
    return next((c for c in watch if c.poll() is not None), None)


def _describe(what: Child | subprocess.Popen) -> str:
    name = what.name if isinstance(what, Child) else "process"
    code = what.poll()
    tail = what.log(4000) if isinstance(what, Child) else ""
    return f"{name} {how_it_ended(code if code is not None else 0)}" + (f"\n{tail}" if tail else "")


def wait_for_http(url: str, *, watch: Iterable[Child | subprocess.Popen] = (), timeout: float = 60.0) -> None:
    """Return once `url` answers with any status below 500. StartupError, with the log tail,
    as soon as a watched child exits, or at the timeout."""
    watch = list(watch)
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if (gone := _exited(watch)) is not None:
            raise StartupError(f"{_describe(gone)}\n(before {url} answered)")
        try:
            with _OPENER.open(url, timeout=2):
                return
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                return  # it answered
            last = exc
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.2)
    tails = "".join(f"\n{c.log(4000)}" for c in watch if isinstance(c, Child))
    raise StartupError(f"{url} did not answer within {timeout:.0f}s ({last}){tails}")


def wait_for_port(
    port: int, *, watch: Iterable[Child | subprocess.Popen] = (), timeout: float = 30.0
) -> None:
    """Return once something listens on 127.0.0.1:`port`; StartupError as wait_for_http."""
    watch = list(watch)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (gone := _exited(watch)) is not None:
            raise StartupError(f"{_describe(gone)}\n(before listening on port {port})")
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise StartupError(f"nothing listened on 127.0.0.1:{port} within {timeout:.0f}s")


def wait_for_log(child: Child, text: str, *, timeout: float = 60.0) -> None:
    """Return once `text` is in the child's log; StartupError if it exits first or at the timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.logged(text):
            return
        if child.poll() is not None:
            raise StartupError(f"{_describe(child)}\n(before it logged {text!r})")
        time.sleep(0.2)
    raise StartupError(f"{child.name} did not log {text!r} within {timeout:.0f}s\n{child.log(4000)}")


class Supervisor:
    """Starts children and restarts any that dies while the others carry on: a killed Celery
    worker comes back (and gets its unacknowledged tasks again) while the web server serves.

    A dead child is restarted after `backoff_first` seconds, doubling on each quick death up
    to `backoff_max`; one that had run `stable_after` seconds starts over at `backoff_first`.
    """

    def __init__(
        self,
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        say: Callable[[str], None] = print,
        backoff_first: float = 1.0,
        backoff_max: float = 30.0,
        stable_after: float = 60.0,
    ):
        self.env = env
        self.cwd = cwd
        self.say = say
        self.backoff_first = backoff_first
        self.backoff_max = backoff_max
        self.stable_after = stable_after
        self.children: list[Child] = []
        self._argv: dict[str, list[str]] = {}
        self._delay: dict[str, float] = {}  # the last restart delay; absent until it first dies
        self._restart_at: dict[str, float] = {}  # present while it is dead and waiting

    def start(self, name: str, argv: list[str]) -> Child:
        self._argv[name] = argv
        child = Child(name, argv, env=self.env, cwd=self.cwd)
        self.children.append(child)
        return child

    def any_exited(self) -> bool:
        return _exited(self.children) is not None

    def check(self) -> None:
        """Notice children that died and restart those whose backoff is over."""
        now = time.monotonic()
        for i, child in enumerate(self.children):
            name = child.name
            if name not in self._restart_at:
                code = child.poll()
                if code is None:
                    continue
                # What is left of its process group (Celery pool processes mid-task, gunicorn
                # workers holding the port) goes too: the new one gets those tasks again.
                signal_group(child.proc, signal.SIGKILL)
                uptime = now - child.started
                if uptime >= self.stable_after or name not in self._delay:
                    delay = self.backoff_first
                else:
                    delay = min(self._delay[name] * 2, self.backoff_max)
                self._delay[name] = delay
                self._restart_at[name] = now + delay
                self.say(
                    f"{time.strftime('%H:%M:%S')} {name} (pid {child.pid}) "
                    f"{how_it_ended(code)} after {uptime:.0f}s; restarting it in {delay:g}s"
                )
            elif now >= self._restart_at[name]:
                del self._restart_at[name]
                child.proc.wait()
                self.children[i] = Child(name, self._argv[name], env=self.env, cwd=self.cwd)
                self.say(f"{time.strftime('%H:%M:%S')} {name} restarted (pid {self.children[i].pid})")

    def run_forever(self, interval: float = 0.5) -> None:
        """Supervise until interrupted (KeyboardInterrupt, from SIGINT or SIGTERM)."""
        while True:
            self.check()
            time.sleep(interval)

    def stop(self, grace: float) -> None:
        stop_all(self.children, grace)
