"""gitcore.gitstream.GitProcessResponse over real git processes: a full read gives git's bytes,
and however the response ends (read to the end, closed early by a client that went away, git
failing) git is gone and reaped, and on_exit hears of it once."""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from gitcore.git import popen_git, run_git
from gitcore.gitstream import Feeder, GitProcessResponse
from tests.gitutil import make_history

# Closing a response sends Django's request_finished, which closes the thread's old database
# connections: allowed only to tests that may touch the database.
pytestmark = pytest.mark.django_db


@pytest.fixture
def repo(tmp_path, git_home) -> tuple[Path, str]:
    """A repository with a 6 MiB blob (more than git's output pipe holds): (git dir, blob id)."""
    make_history(tmp_path / "work", git_home)
    path = tmp_path / "work" / ".git"
    big = os.urandom(6 * 1024 * 1024)
    blob = run_git(["hash-object", "-w", "--stdin"], repo=path, input=big).text.strip()
    return path, blob


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)  # a zombie would be reaped here, a live child answer (0, 0)
    except ChildProcessError:
        return True
    return False


class Exits(list):
    def __call__(self, returncode: int, sent: int) -> None:
        self.append((returncode, sent))


def test_full_read_gives_the_bytes(repo):
    path, blob = repo
    expected = run_git(["cat-file", "blob", blob], repo=path).stdout
    exits = Exits()
    proc = popen_git(["cat-file", "blob", blob], repo=path, stdin=subprocess.DEVNULL)
    response = GitProcessResponse(
        proc, content_type="application/octet-stream", prefix=b"HEAD", on_exit=exits
    )
    body = b"".join(response)
    assert body == b"HEAD" + expected
    assert proc.returncode == 0 and _reaped(proc.pid)
    response.close()  # after the end: nothing more happens
    assert exits == [(0, len(expected))]
    assert response["Cache-Control"].startswith("no-cache")


def test_closed_early_kills_and_reaps(repo):
    path, blob = repo
    exits = Exits()
    proc = popen_git(["cat-file", "blob", blob], repo=path, stdin=subprocess.DEVNULL)
    response = GitProcessResponse(proc, content_type="application/octet-stream", on_exit=exits)
    first = next(iter(response))
    assert 0 < len(first) < 6 * 1024 * 1024
    assert proc.poll() is None  # git still has output to write, blocked on the full pipe
    response.close()  # the client went away
    assert proc.returncode == -9 and _reaped(proc.pid)
    assert exits == [(-9, len(first))]


def test_closed_before_reading_kills_a_waiting_git(repo):
    path, _blob = repo
    exits = Exits()
    proc = popen_git(["cat-file", "--batch"], repo=path)  # waits on stdin forever
    response = GitProcessResponse(proc, content_type="application/octet-stream", on_exit=exits)
    response.close()
    assert proc.returncode == -9 and _reaped(proc.pid)
    assert exits == [(-9, 0)]


def test_failing_git_ends_the_stream(repo, caplog):
    path, _blob = repo
    exits = Exits()
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the response closes it, as it does in the views
    proc = popen_git(
        ["cat-file", "blob", "no-such-object"], repo=path, stdin=subprocess.DEVNULL, stderr=stderr
    )
    response = GitProcessResponse(
        proc, content_type="application/octet-stream", on_exit=exits, stderr_file=stderr
    )
    with caplog.at_level("INFO", logger="gitcore.gitstream"):
        assert b"".join(response) == b""
    assert proc.returncode == 128 and exits == [(128, 0)]
    assert "no-such-object" in caplog.text
    assert stderr.closed


def test_abandoned_push_whose_body_arrived_is_allowed_to_finish(repo):
    """A push whose request body came whole finishes when the client goes away (its refs and
    their record cannot part ways); the feeder closed git's stdin, so git ends by itself."""
    path, blob = repo
    exits = Exits()
    proc = popen_git(["cat-file", "--batch-check"], repo=path)
    feeder = Feeder(proc, b"", io.BytesIO(f"{blob}\n".encode()))
    feeder.start()
    response = GitProcessResponse(
        proc,
        content_type="application/octet-stream",
        feeder=feeder,
        on_exit=exits,
        finish_when_abandoned=True,
    )
    response.close()  # nothing read: the output is drained, git is not killed
    assert proc.returncode == 0 and _reaped(proc.pid)
    assert exits == [(0, 0)]


def test_abandoned_push_whose_body_broke_off_is_killed(repo):
    path, _blob = repo

    class BrokenBody(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            raise OSError("client went away mid-body")

    exits = Exits()
    proc = popen_git(["cat-file", "--batch"], repo=path)
    feeder = Feeder(proc, b"", BrokenBody())
    feeder.start()
    response = GitProcessResponse(
        proc,
        content_type="application/octet-stream",
        feeder=feeder,
        on_exit=exits,
        finish_when_abandoned=True,
    )
    response.close()
    assert isinstance(feeder.error, OSError)
    assert proc.returncode == -9 and _reaped(proc.pid)  # the feeder killed it
    assert exits == [(-9, 0)]
