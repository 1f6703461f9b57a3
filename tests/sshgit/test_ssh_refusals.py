"""What git over SSH refuses, through the real sshd and gateway: each refusal is one clear line,
runs nothing and changes nothing on disk. And a key revoked (or an account deactivated) while an
ssh master connection stays open is refused on its next command."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.factories import UserFactory
from tests.sshgit.sshsupport import adopt, git, git_bytes, hostsite_lines, key_pair, register_key, revoke_key
from workspaces.moderation_bans import do_ban_from_repository

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

NOT_SERVED = "is not served: only git-upload-pack, git-receive-pack and git-upload-archive"
NOT_A_PATH = "not a repository path"


def _disk_state() -> dict[str, float]:
    """Every file under REPO_ROOT with its modification time."""
    root = Path(settings.REPO_ROOT)
    return {str(p): p.stat().st_mtime for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def alice(world, ssh_git, git_home):
    return adopt(ssh_git, world.host, git_home, world.add("alice").user)


def _only_line(result) -> str:
    """The refusal: exactly one line on stderr, nothing on stdout, a failing exit."""
    lines = result.stderr.splitlines()
    assert result.returncode != 0, result
    assert result.stdout == "", result.stdout
    assert len(lines) == 1, lines
    return lines[0]


REFUSED = [
    ("ls", f"'ls' {NOT_SERVED}"),
    ("sh -c id", f"'sh' {NOT_SERVED}"),
    ("scp -t /tmp", f"'scp' {NOT_SERVED}"),
    ("git-upload-pack", "git-upload-pack takes one repository path"),
    ("git-upload-pack 'owner/project.git; touch {marker}'", NOT_A_PATH),
    ("git-upload-pack 'owner/project.git'; touch {marker}", "takes one repository path"),
    ("git-receive-pack '$(touch {marker})'", NOT_A_PATH),
    ("git-receive-pack `touch {marker}`", "takes one repository path"),
    ("git-upload-pack 'owner/project.git' | touch {marker}", "takes one repository path"),
    ("git-upload-pack 'owner/pro`touch {marker}`ject.git'", NOT_A_PATH),
    ("git-upload-pack '../../etc'", NOT_A_PATH),
    ("git-upload-pack 'owner/../project.git'", NOT_A_PATH),
    ("git-upload-pack '/etc/passwd'", "repository 'etc/passwd' not found"),
    ("git-upload-pack '/srv/git/owner/project.git'", NOT_A_PATH),
    ("git-upload-pack '~root/x.git'", NOT_A_PATH),
    ("git-upload-pack '~/project.git'", NOT_A_PATH),
    ("git-upload-archive 'owner/project.git' --remote=x", "takes one repository path"),
]


def test_other_commands_and_paths_are_refused_in_one_line(ssh_git, alice, tmp_path):
    # One test for all of them: the scene (a live repository) costs more than the commands.
    marker = tmp_path / f"pwned-{uuid.uuid4().hex}"
    before = _disk_state()
    for command, says in REFUSED:
        result = ssh_git.ssh(alice.pair, command.format(marker=marker), stdin=subprocess.DEVNULL)
        line = _only_line(result)
        assert line.startswith("hostsite: ") and says in line, (command, line)
    assert not marker.exists()
    assert _disk_state() == before


def test_scp_and_sftp_reach_nothing(ssh_git, alice, tmp_path):
    source = tmp_path / "payload"
    source.write_text("x\n")
    argv = ssh_git.ssh_argv(alice.pair)
    # scp takes -P for the port; the rest of the options are ssh's own.
    options = [a if a != "-p" else "-P" for a in argv[1:]]
    target = f"{ssh_git.user}@{ssh_git.host}:/tmp/{uuid.uuid4().hex}"
    legacy = subprocess.run(
        ["scp", "-O", *options, str(source), target], capture_output=True, text=True, timeout=30
    )
    assert legacy.returncode != 0
    assert f"hostsite: 'scp' {NOT_SERVED}" in legacy.stderr, legacy.stderr
    sftp = subprocess.run(
        ["scp", "-s", *options, str(source), target], capture_output=True, text=True, timeout=30
    )
    assert sftp.returncode != 0
    assert "subsystem request failed" in sftp.stderr or "Connection closed" in sftp.stderr, sftp.stderr
    assert not Path(target.split(":", 1)[1]).exists()


def test_environment_from_the_client_has_no_effect(ssh_git, world, alice, tmp_path):
    """sshd accepts GIT_PROTOCOL only: GIT_DIR and the like never reach git."""
    elsewhere = tmp_path / "elsewhere.git"
    git(alice.env, "init", "--quiet", "--bare", str(elsewhere))
    # Were GIT_DIR honoured, git would serve the empty repository there (and LD_PRELOAD of a
    # missing library would make every program fail to start).
    set_env = [
        f"-o SetEnv=GIT_DIR={elsewhere}",
        "-o SetEnv=LD_PRELOAD=/nonexistent.so",
        "-o SetEnv=PATH=/nowhere",
    ]
    env = {**alice.env, "GIT_SSH_COMMAND": " ".join([*ssh_git.ssh_argv(alice.pair), *set_env])}
    clone = git(env, "clone", "--quiet", alice.ssh_url(world.repo.full_name), str(tmp_path / "c"))
    assert clone.returncode == 0, clone.stderr
    assert git(env, "rev-parse", "HEAD", cwd=tmp_path / "c").stdout.strip() == world.base_sha
    assert hostsite_lines(clone.stderr) == []


def test_pty_agent_and_forwarding_are_refused(ssh_git, world, alice):
    url_path = f"'{world.repo.full_name}.git'"
    pty = ssh_git.ssh(alice.pair, "-tt", f"git-upload-pack {url_path}", stdin=subprocess.DEVNULL)
    assert "PTY allocation request failed" in pty.stderr, pty.stderr
    # -A: the client asks (with an agent to forward) and sshd_config (AllowAgentForwarding no)
    # drops the request; the session runs as it would without it.
    agent_dir = Path(tempfile.mkdtemp(prefix="ag", dir="/tmp"))
    agent = subprocess.run(
        ["ssh-agent", "-s", "-a", str(agent_dir / "s")], capture_output=True, text=True, check=True
    )
    agent_pid = int(agent.stdout.split("SSH_AGENT_PID=")[1].split(";")[0])
    try:
        env = {**os.environ, "SSH_AUTH_SOCK": str(agent_dir / "s")}
        forwarded = ssh_git.ssh(alice.pair, "-v", "-A", "-T", env=env, stdin=subprocess.DEVNULL)
        assert "Requesting authentication agent forwarding" in forwarded.stderr
        assert "Hi alice!" in forwarded.stderr
    finally:
        os.kill(agent_pid, 15)
        shutil.rmtree(agent_dir, ignore_errors=True)
    config = (ssh_git.var_dir / "ssh" / "sshd_config").read_text()
    for line in ("AllowAgentForwarding no", "AllowTcpForwarding no", "PermitTTY no"):
        assert line in config, line
    # -R: sshd refuses the remote listener.
    remote = ssh_git.ssh(
        alice.pair, "-N", "-o", "ExitOnForwardFailure=yes", "-R", "0:127.0.0.1:9", stdin=subprocess.DEVNULL
    )
    assert remote.returncode == 255
    assert "remote port forwarding failed" in remote.stderr, remote.stderr


def test_local_forwarding_is_refused(ssh_git, world, alice):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        local = probe.getsockname()[1]
    web_port = world.host.rsplit(":", 1)[1]
    argv = [*ssh_git.ssh_argv(alice.pair), "-N", "-L", f"{local}:127.0.0.1:{web_port}"]
    proc = subprocess.Popen(
        [*argv, f"{ssh_git.user}@{ssh_git.host}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        got = None
        for _ in range(100):
            try:
                with socket.create_connection(("127.0.0.1", local), timeout=5) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    try:
                        got = conn.recv(100)
                    except ConnectionResetError:
                        got = b""
                break
            except ConnectionRefusedError:
                time.sleep(0.05)
        assert got == b"", got  # the channel was refused: the web server's answer never came
    finally:
        # Killed, not asked: an ssh -N whose forward was refused sometimes sits on SIGTERM for
        # seconds. What it said is already in the pipe.
        proc.kill()
        _out, err = proc.communicate(timeout=10)
    assert "administratively prohibited" in err.decode(), err


def test_unknown_key_and_greeting(ssh_git, alice):
    stranger = key_pair(ssh_git, "stranger")
    refused = ssh_git.ssh(stranger, "git-upload-pack 'owner/project.git'", stdin=subprocess.DEVNULL)
    assert refused.returncode == 255
    assert "Permission denied (publickey)" in refused.stderr
    assert alice.key.last_used_at is None
    greeted = ssh_git.ssh(alice.pair, "-T", stdin=subprocess.DEVNULL)
    alice.key.refresh_from_db()
    assert alice.key.last_used_at is not None
    assert greeted.returncode == 1
    assert (
        _only_line(greeted) == "Hi alice! You've authenticated, but hostsite does not provide shell access."
    )


def test_a_key_deleted_before_connecting_cannot_log_in(ssh_git, world, git_home):
    pair = key_pair(ssh_git, "gone")
    key = register_key(world.owner.user, pair)
    assert ssh_git.ssh(pair, "-T", stdin=subprocess.DEVNULL).returncode == 1  # the greeting
    revoke_key(key)
    refused = ssh_git.ssh(pair, "-T", stdin=subprocess.DEVNULL)
    assert refused.returncode == 255
    assert "Permission denied (publickey)" in refused.stderr


@pytest.mark.parametrize("how", ["key removed", "account deactivated"])
def test_revoked_mid_session_over_a_master_connection(ssh_git, world, alice, how, tmp_path):
    # A Unix socket path has ~100 bytes: the control socket lives in a short directory.
    control = Path(tempfile.mkdtemp(prefix="cm", dir="/tmp"))
    master = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}/cm", "-o", "ControlPersist=60"]
    env = {**alice.env, "GIT_SSH_COMMAND": " ".join([*ssh_git.ssh_argv(alice.pair), *master])}
    url = alice.ssh_url(world.repo.full_name)
    try:
        first = git(env, "ls-remote", url)
        assert first.returncode == 0, first.stderr
        assert (control / "cm").exists()
        if how == "key removed":
            revoke_key(alice.key)
        else:
            alice.user.is_active = False
            alice.user.save(update_fields=["is_active"])
        before = world.refs()
        for args in (("ls-remote", url), ("clone", url, str(tmp_path / "c"))):
            again = git(env, *args)
            assert (control / "cm").exists(), "the same master connection carried it"
            assert again.returncode != 0
            assert hostsite_lines(again.stderr) == ["hostsite: this key is not, or no longer, authorized"]
        assert world.refs() == before
    finally:
        subprocess.run(
            [*ssh_git.ssh_argv(alice.pair), *master, "-O", "exit", f"{ssh_git.user}@{ssh_git.host}"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        shutil.rmtree(control, ignore_errors=True)


def test_a_repository_ban_refuses_pushes_over_ssh_in_the_words_of_http(world, alice):
    staff = UserFactory(username="staff", is_staff=True)
    do_ban_from_repository(repo=world.repo, user=alice.user, acting_user=staff, reason="spam")
    work = world.users["alice"].work
    world.users["alice"].commit("after the ban")
    before = world.refs()
    for refspec in ("HEAD:refs/users/alice/x", "HEAD:refs/for/main", "HEAD:my-fix"):
        said = {}
        for transport in ("http", "ssh"):
            result = git(alice.env, "push", alice.url(transport, world.repo.full_name), refspec, cwd=work)
            assert result.returncode != 0, (transport, refspec)
            said[transport] = hostsite_lines(result.stderr)
        assert said["ssh"] == said["http"] and said["ssh"], (refspec, said)
    assert world.refs() == before
    # Reading is not banned.
    assert git(alice.env, "ls-remote", alice.ssh_url(world.repo.full_name)).returncode == 0


def test_a_name_that_is_not_utf8_is_refused_over_ssh_in_the_words_of_http(world, alice):
    """One `hostsite:` line naming the bytes escaped, the same both ways; never a traceback."""
    pusher = world.users["alice"]
    pusher.commit("work under a bad name")
    before = world.refs()
    for ref in (b"refs/heads/bad\xff\xfe", b"refs/users/alice/caf\xe9", b"refs/for/main/\xff"):
        said = {}
        for transport in ("http", "ssh"):
            url = alice.url(transport, world.repo.full_name)
            result = git_bytes(alice.env, "push", url, os.fsdecode(b"HEAD:" + ref), cwd=pusher.work)
            stderr = result.stderr.decode("utf-8", "backslashreplace")
            assert result.returncode != 0 and "Traceback" not in stderr and 'File "' not in stderr, stderr
            said[transport] = [line.strip() for line in hostsite_lines(stderr)]
        escaped = ref.decode("utf-8", "backslashreplace")
        assert (
            said["ssh"]
            == said["http"]
            == [
                f"remote: hostsite: {escaped} is not UTF-8 (\\xNN marks each byte that is not); push it under a UTF-8 name"
            ]
        ), said
    assert world.refs() == before
