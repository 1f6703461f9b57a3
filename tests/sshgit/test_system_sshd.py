"""Port 22 beside the system's own sshd: `manage.py ssh_prepare --match-block` gives the block
for its sshd_config, and an sshd configured with it (here a second sshd standing in for the
system's) serves git through the same gateway."""

from __future__ import annotations

import subprocess

import pytest

from hostsite.processes import wait_for_port
from sshgit import services
from tests import live

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_match_block_serves_git_through_the_systems_sshd(ssh_git, live_env, world, git_home, tmp_path):
    env = {
        **live_env,
        "VAR_DIR": str(ssh_git.var_dir),
        "SSH_PORT": str(ssh_git.port),
        "SSH_SYSTEM_SSHD": "1",
    }
    prepare = [live.PY, str(live.BASE_DIR / "manage.py"), "ssh_prepare"]
    block = subprocess.run([*prepare, "--match-block"], env=env, capture_output=True, text=True, check=True)
    assert block.stdout.startswith("# hostsite: git over SSH")
    assert f"Match User {ssh_git.user}\n" in block.stdout
    assert "AuthorizedKeysCommand " in block.stdout and "PermitTTY no" in block.stdout
    # Without an sshd of its own, make run starts only the gateway.
    summary = subprocess.run(prepare, env=env, capture_output=True, text=True, check=True).stdout
    assert '"sshd"' not in summary and '"gateway_socket"' in summary

    # The "system" sshd: its own settings for everyone, then hostsite's block.
    port = live.free_port()
    config = tmp_path / "system_sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\n"
        f"HostKey {ssh_git.var_dir / 'ssh' / 'ssh_host_ed25519_key'}\n"
        f"PidFile {tmp_path / 'sshd.pid'}\nUsePAM no\nPasswordAuthentication yes\n\n{block.stdout}"
    )
    check = subprocess.run(["/usr/sbin/sshd", "-t", "-f", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    system_sshd = live.ManagedProcess(
        "system-sshd", ["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], env, tmp_path
    )
    try:
        wait_for_port(port, watch=[system_sshd])
        pair = ssh_git.make_key("system")
        services.add_user_key(world.owner.user, title="laptop", text=f"{pair.key_type} {pair.key_data}")
        known = tmp_path / "known_hosts"
        host_key = (ssh_git.var_dir / "ssh" / "ssh_host_ed25519_key.pub").read_text().split()
        known.write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
        ssh = (
            f"ssh -F /dev/null -i {pair.path} -o IdentitiesOnly=yes -o BatchMode=yes "
            f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes"
        )
        url = f"ssh://{ssh_git.user}@127.0.0.1:{port}/owner/project.git"
        listed = subprocess.run(
            ["git", "ls-remote", url],
            env={**git_home, "GIT_SSH_COMMAND": ssh},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        assert world.refs()["refs/heads/main"] in listed.stdout
        # The block's restrictions hold there too.
        shell = subprocess.run(
            [*ssh.split(), "-p", str(port), "-tt", f"{ssh_git.user}@127.0.0.1"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert "PTY allocation request failed" in shell.stderr
        assert shell.returncode != 0 and shell.stdout == ""
    finally:
        system_sshd.stop()
