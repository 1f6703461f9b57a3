"""The SSH runtime with a real sshd and a real ssh client: the AuthorizedKeysCommand, logins,
what sshd refuses, and the gateway's hand-off to a forked session (tests.sshgit.echo_serve
stands in for the git session and reports what reached it)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.utils import timezone

from sshgit.models import PublicKey
from tests.factories import RepositoryFactory, UserFactory

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]
SOURCE_PROGRAMS = Path(__file__).resolve().parents[2] / "sshgit" / "programs"


def add_key(key, **owner) -> PublicKey:
    return PublicKey.objects.create(
        title="test", key_type=key.key_type, key_data=key.key_data, fingerprint=key.fingerprint, **owner
    )


def keys_command(server, key, *, key_type=None, key_data=None) -> subprocess.CompletedProcess:
    """The program as sshd runs it: as the AuthorizedKeysCommandUser, with %u %f %t %k."""
    argv = [
        str(server.keys_program),
        server.user,
        key.fingerprint,
        key_type or key.key_type,
        key_data or key.key_data,
    ]
    user = server.user if os.geteuid() == 0 else None
    return subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False, env={}, user=user)


def report(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return json.loads(result.stdout.splitlines()[0])


def test_keys_command_prints_the_forced_command_for_a_known_key(ssh_server):
    key = ssh_server.make_key("alice")
    row = add_key(key, user=UserFactory())
    result = keys_command(ssh_server, key)
    shell = ssh_server.keys_program.parent / "hostsite-shell"
    expected = f'command="{shell} key-{row.pk}",restrict {key.key_type} {key.key_data}\n'
    assert result.stdout == expected, result.stderr
    assert result.returncode == 0


def test_keys_command_prints_nothing_for_unknown_or_unusable_keys(ssh_server):
    unknown = ssh_server.make_key("unknown")
    assert keys_command(ssh_server, unknown).stdout == ""

    inactive = ssh_server.make_key("inactive")
    user = UserFactory()
    add_key(inactive, user=user)
    assert keys_command(ssh_server, inactive).stdout != ""
    user.is_active = False
    user.save()
    assert keys_command(ssh_server, inactive).stdout == ""

    deploy = ssh_server.make_key("deploy")
    repo = RepositoryFactory()
    add_key(deploy, repository=repo)
    assert keys_command(ssh_server, deploy).stdout != ""
    repo.deleted_at = timezone.now()
    repo.save()
    assert keys_command(ssh_server, deploy).stdout == ""

    # The fingerprint matches, but the offered blob or type is not the stored one.
    other = ssh_server.make_key("other")
    known = ssh_server.make_key("known")
    add_key(known, user=UserFactory())
    assert keys_command(ssh_server, known, key_data=other.key_data).stdout == ""
    assert keys_command(ssh_server, known, key_type="ssh-rsa").stdout == ""


def test_login_with_an_unknown_key_is_refused(ssh_server):
    key = ssh_server.make_key("stranger")
    result = ssh_server.ssh(key, "git-upload-pack 'x.git'")
    assert result.returncode == 255
    assert "Permission denied (publickey)" in result.stderr


def test_ssh_reaches_serve_with_the_command_as_data(ssh_server, tmp_path):
    key = ssh_server.make_key("bob")
    row = add_key(key, user=UserFactory())
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    command = f"git-upload-pack 'o/r.git'; touch {marker} $(touch {marker}) `touch {marker}` | sh"
    command += ' "quoted" \\back\\slash\ttab\nnew line \x01 ü€'  # JSON-escaped by hand
    # git itself asks ssh to send it (-o SendEnv=GIT_PROTOCOL).
    result = ssh_server.ssh(
        key, "-o", "SendEnv=GIT_PROTOCOL", command, env={**os.environ, "GIT_PROTOCOL": "version=2"}
    )
    got = report(result)
    assert got["key_id"] == row.pk
    assert got["command"] == command, "the command reaches serve verbatim"
    assert got["protocol"] == "version=2", "GIT_PROTOCOL is accepted from the client"
    assert got["remote"] == "127.0.0.1"
    assert not marker.exists(), "nothing ran the command through a shell"

    # `ssh -T` with no command: serve gets None (it greets the user, as GitHub does).
    got = report(ssh_server.ssh(key, "-T"))
    assert got["command"] is None

    # The exit status and stderr of serve reach the client.
    result = ssh_server.ssh(key, "exit 3")
    assert result.returncode == 3
    assert "leaving" in result.stderr

    # Both directions carry data.
    payload = os.urandom(300_000).hex()
    result = ssh_server.ssh(key, "cat", input=payload)
    assert result.stdout.splitlines()[1] == payload


def test_sshd_refuses_a_pty_and_forwarding(ssh_server):
    key = ssh_server.make_key("carol")
    add_key(key, user=UserFactory())
    result = ssh_server.ssh(key, "-tt", "hello", stdin=subprocess.DEVNULL)
    assert "PTY allocation request failed" in result.stderr
    result = ssh_server.ssh(key, "-W", f"127.0.0.1:{ssh_server.port}", stdin=subprocess.DEVNULL)
    assert result.returncode != 0
    assert "administratively prohibited" in result.stderr, result.stderr


def test_gateway_survives_a_crashed_child_and_a_vanished_client(ssh_server):
    key = ssh_server.make_key("dave")
    add_key(key, user=UserFactory())
    result = ssh_server.ssh(key, "crash")
    assert result.returncode == 137, (result.returncode, result.stderr)  # 128 + SIGKILL

    result = ssh_server.ssh(key, "raise")
    assert result.returncode == 1
    assert "hostsite: internal error (RuntimeError)" in result.stderr

    argv = [*ssh_server.ssh_argv(key), f"{ssh_server.user}@{ssh_server.host}", "sleep 2"]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert client.stdout is not None
    assert json.loads(client.stdout.readline())["command"] == "sleep 2"  # the session runs
    client.kill()
    client.wait()

    assert ssh_server.gateway.poll() is None
    assert report(ssh_server.ssh(key, "after"))["command"] == "after"


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return {int(p) for p in out.stdout.split()}


def test_a_dead_spare_is_replaced_and_its_session_forked_at_once(ssh_server):
    """The gateway keeps one warmed child waiting (sshgit.spares); if that child dies, the next
    session is forked when it arrives, and a new spare is made after it."""
    key = ssh_server.make_key("erin")
    add_key(key, user=UserFactory())
    assert report(ssh_server.ssh(key, "first"))["command"] == "first"
    gateway = ssh_server.gateway.pid
    for _ in range(100):  # an earlier test's session may still be ending
        spares = _children(gateway)
        if len(spares) == 1:
            break
        time.sleep(0.1)
    assert len(spares) == 1, spares  # between sessions: the spare alone
    (spare,) = spares
    os.kill(spare, 9)
    for _ in range(50):
        if spare not in _children(gateway):
            break
        time.sleep(0.1)
    got = report(ssh_server.ssh(key, "without a spare"))
    assert got["command"] == "without a spare"
    for _ in range(50):
        replacement = _children(gateway) - {spare}
        if replacement:
            break
        time.sleep(0.1)
    assert len(replacement) == 1
    assert report(ssh_server.ssh(key, "with the new spare"))["command"] == "with the new spare"


def test_gateway_refuses_other_uids(ssh_server):
    if os.geteuid() != 0:
        pytest.skip("needs root to connect as another uid")
    import pwd
    import socket

    nobody = pwd.getpwnam("nobody").pw_uid
    # Past the file mode: the peer check alone must refuse.
    os.chmod(ssh_server.socket, 0o666)  # noqa: S103
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            answer = b"error"
            try:
                os.setuid(nobody)
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.settimeout(5)
                    sock.connect(str(ssh_server.socket))
                    sock.sendall(b'{"op": "key", "fingerprint": "SHA256:x"}\n')
                    answer = b"answer:" + sock.recv(100)
            except OSError as exc:
                answer = f"oserror:{exc}".encode()
            finally:
                os.write(write_end, answer)
                os._exit(0)
        os.close(write_end)
        os.waitpid(pid, 0)
        answer = os.read(read_end, 1000)
        os.close(read_end)
    finally:
        os.chmod(ssh_server.socket, 0o600)
    # Closed without an answer (an accepted peer gets "\n" for an unknown key); depending on
    # timing, the write itself may fail.
    assert answer == b"answer:" or answer.startswith(b"oserror:[Errno"), answer
    assert ssh_server.gateway.logged(f"refused a connection from uid {nobody}")


def test_shell_says_the_service_is_unavailable_without_a_gateway(tmp_path):
    # The source copy looks for gateway.sock beside itself, where none exists.
    copy = tmp_path / "shell.py"
    copy.write_text((SOURCE_PROGRAMS / "shell.py").read_text())
    result = subprocess.run(
        ["python3", "-I", "-S", str(copy), "key-1"],
        capture_output=True,
        text=True,
        env={"SSH_ORIGINAL_COMMAND": "git-upload-pack x"},
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == "hostsite: the SSH service is unavailable, try again shortly\n"
    keys = tmp_path / "keys.py"
    keys.write_text((SOURCE_PROGRAMS / "keys_command.py").read_text())
    result = subprocess.run(
        ["python3", "-I", "-S", str(keys), "git", "SHA256:x", "ssh-ed25519", "AAAA"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0
    assert result.stdout == ""
    assert "the gateway did not answer" in result.stderr


def test_gateway_lets_running_sessions_finish_on_sigterm(live_env, tmp_path):
    """SIGTERM: no new sessions, the running one ends normally with its status, then it exits."""
    import signal
    import time

    from tests import live

    copy = tmp_path / "shell.py"  # finds gateway.sock beside itself
    copy.write_text((SOURCE_PROGRAMS / "shell.py").read_text())
    socket_path = tmp_path / "gateway.sock"
    argv = [live.PY, str(live.BASE_DIR / "manage.py"), "ssh_gateway", "--socket", str(socket_path)]
    gateway = live.ManagedProcess(
        "gateway", [*argv, "--serve", "tests.sshgit.echo_serve:serve"], live_env, tmp_path
    )
    try:
        live.processes.wait_for_log(gateway, "listening on", timeout=60)
        session = subprocess.Popen(
            ["python3", "-I", "-S", str(copy), "key-7"],
            env={"SSH_ORIGINAL_COMMAND": "sleep 1.5", "SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert session.stdout is not None
        got = json.loads(session.stdout.readline())
        assert (got["key_id"], got["remote"]) == (7, "10.0.0.1")
        gateway.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert not socket_path.exists(), "a stopping gateway takes no new sessions"
        assert gateway.poll() is None, "it waits for the running session"
        assert session.wait(10) == 0, session.stderr.read() if session.stderr else ""
        assert gateway.proc.wait(10) == 0
        assert gateway.logged("waiting for 1 session(s)")
    finally:
        gateway.stop()
