"""The hooks that decide relay to the process serving the push (gitcore/hookclient.py to
gitcore.hooksocket): the installed script, run as git runs it, reaches the handler registered
for its push and prints its answer, and fails closed (exit 1, one `hostsite:` line, nothing
decided) when there is no socket, no such push, no answer, or an answer cut short. The
registered push, not the hook's own environment, says who pushes."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from gitcore import hookclient, hooksocket
from gitcore.git import git_environment
from repos import storage

TIMEOUT = 60


@pytest.fixture(scope="module")
def client(tmp_path_factory, django_db_blocker) -> str:
    """The pre-receive script as installed (the relay client)."""
    with django_db_blocker.unblock():
        return str(storage.install_hooks() / "pre-receive")


def run_client(client, variables, stdin=b"", env=None, cwd=None, name="pre-receive"):
    full = {**git_environment(), **(env or {}), **variables}
    argv0 = client if name == "pre-receive" else None
    if argv0 is None:  # the same script under another hook's name: git runs it by that name
        argv0 = os.path.join(os.path.dirname(client), name)
    return subprocess.run(
        [argv0, "--arg", "\xe9"],
        input=stdin,
        env=full,
        cwd=cwd,
        capture_output=True,
        timeout=TIMEOUT,
    )


def one_line(result) -> str:
    assert result.returncode == 1, result
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hostsite: "), lines
    assert "Traceback" not in result.stderr.decode() and result.stdout == b""
    return lines[0]


def test_the_handler_registered_for_the_push_answers(client, tmp_path):
    seen = {}

    def handler(call: hooksocket.HookCall) -> int:
        seen.update(hook=call.hook, args=call.args, stdin=call.stdin.read(), env=call.env)
        call.stdout.write(b"out\n")
        call.stderr.write("hostsite: said on stderr\n")
        return 3

    repo = tmp_path / "r.git"
    repo.mkdir()
    (repo / "objects" / "incoming").mkdir(parents=True)
    with hooksocket.open_push(repo, {"HOSTSITE_ROLE": "reader"}, {"pre-receive": handler}) as variables:
        # A hook's own environment says nothing of who pushes: the registration does.
        env = {"HOSTSITE_ROLE": "admin", "GIT_DIR": ".", "GIT_QUARANTINE_PATH": "objects/incoming"}
        result = run_client(client, variables, b"a b c\n", env=env, cwd=repo)
    assert (result.returncode, result.stdout, result.stderr) == (3, b"out\n", b"hostsite: said on stderr\n")
    assert seen["hook"] == "pre-receive" and seen["args"] == ["--arg", "\xe9"]
    assert seen["stdin"] == b"a b c\n"
    assert seen["env"]["HOSTSITE_ROLE"] == "reader"
    # git gives paths relative to the hook's directory; the handler gets them whole.
    assert seen["env"]["GIT_QUARANTINE_PATH"] == str(repo / "objects" / "incoming")
    assert seen["env"]["GIT_DIR"] == str(repo)


def test_without_the_platform_the_hook_refuses(client, tmp_path):
    # Run by git outside hostsite's endpoints (a shell on the server): no socket at all.
    assert "must go through hostsite" in one_line(run_client(client, {}, b"x\n"))
    # A push this process does not know (over, or never started).
    with hooksocket.open_push(tmp_path, {}, {"pre-receive": lambda call: 0}) as variables:
        unknown = {**variables, hooksocket.ENV_TOKEN: "0" * 32}
        assert "knows no push" in one_line(run_client(client, unknown, b"x\n"))
        # A hook the push has no handler for.
        assert "knows no push" in one_line(run_client(client, variables, b"x\n", name="proc-receive"))
    assert "knows no push" in one_line(run_client(client, variables, b"x\n"))
    # A socket nobody listens on.
    gone = {**variables, hooksocket.ENV_SOCKET: "@hostsite-hooks-nobody"}
    assert "did not answer" in one_line(run_client(client, gone, b"x\n"))


def test_a_handler_that_fails_refuses_in_one_line(client, tmp_path):
    def broken(call):
        raise KeyError("a secret path /srv/x")

    with hooksocket.open_push(tmp_path, {}, {"pre-receive": broken}) as variables:
        line = one_line(run_client(client, variables, b"x\n"))
    assert line == "hostsite: the pre-receive hook failed (KeyError); nothing more was changed"


def test_an_answer_cut_short_refuses(client, tmp_path):
    def dies(call):
        call.stdout.write(b"partial")
        call.stdout.flush()
        # The connection ends without an exit status, as when the process serving it dies.
        socket.socket(fileno=os.dup(call.stdin.fileno())).shutdown(socket.SHUT_RDWR)
        return 0

    with hooksocket.open_push(tmp_path, {}, {"pre-receive": dies}) as variables:
        result = run_client(client, variables, b"x\n")
    assert result.returncode == 1 and result.stdout == b"partial"
    assert result.stderr.decode().startswith("hostsite: the platform stopped answering this hook")


def test_a_conversation_larger_than_any_pipe_in_both_directions(client, tmp_path):
    """proc-receive talks with git: it reads a section, answers, reads the next. 4 MB each way,
    answered while it arrives, never waits on a full pipe, and every byte arrives as sent."""

    def echo(call):
        while chunk := call.stdin.read1(65536):
            call.stdout.write(chunk)
            call.stdout.flush()
        return 0

    data = os.urandom(4 * 1024 * 1024)
    with hooksocket.open_push(tmp_path, {}, {"pre-receive": echo}) as variables:
        result = run_client(client, variables, data)
    assert result.returncode == 0, result.stderr
    assert result.stdout == data


def test_many_hooks_at_once_are_each_answered(client, tmp_path):
    def slow(call):
        time.sleep(0.2)
        call.stderr.write(f"hostsite: {call.stdin.read().decode()}\n")
        return 0

    results = {}
    with hooksocket.open_push(tmp_path, {}, {"pre-receive": slow}) as variables:

        def one(n):
            results[n] = run_client(client, variables, str(n).encode())

        threads = [threading.Thread(target=one, args=(n,)) for n in range(24)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    assert {n: (r.returncode, r.stderr) for n, r in results.items()} == {
        n: (0, f"hostsite: {n}\n".encode()) for n in range(24)
    }


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.getuid() != 0, reason="running the hook as another uid needs root")
@pytest.mark.skipif(
    not os.access(SYSTEM_PYTHON, os.X_OK), reason=f"no {SYSTEM_PYTHON} for another uid to run"
)
def test_another_user_is_not_answered(tmp_path):
    """The socket is abstract (no file permissions guard it): the peer's uid does."""
    shared = Path(tempfile.mkdtemp())  # pytest's own directories are the test user's only
    os.chmod(shared, 0o755)  # noqa: S103 - another user runs the script in it
    script = shared / "pre-receive"
    script.write_bytes(Path(hookclient.__file__).read_bytes())
    os.chmod(script, 0o755)  # noqa: S103 - another user runs it
    with hooksocket.open_push(tmp_path, {}, {"pre-receive": lambda call: 0}) as variables:
        result = subprocess.run(
            [SYSTEM_PYTHON, "-IS", str(script)],
            input=b"x\n",
            env={"PATH": "/usr/bin:/bin", **variables},
            cwd="/",
            capture_output=True,
            timeout=TIMEOUT,
            preexec_fn=lambda: os.setuid(65534),
        )
    shutil.rmtree(shared)
    # Cut off at once: whether before or after its request was sent, no answer came.
    assert result.returncode == 1 and result.stderr.startswith(b"hostsite: the platform "), result
