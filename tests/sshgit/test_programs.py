"""sshd's two programs come in C (compiled when a compiler is here) and as stdlib Python (when
not): both must answer alike, byte for byte, for keys sshd asks about and for the commands and
environments sessions hand to the gateway."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import uuid

import pytest

from sshgit import sshd
from tests.factories import RepositoryFactory, UserFactory
from tests.sshgit.test_runtime import add_key

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def twins(ssh_server, tmp_path_factory):
    """{"c": runtime dir, "python": runtime dir}, each with its programs beside a link to the
    running gateway's socket. Skips C where no compiler is installed."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler (cc): only the Python programs can run here")
    dirs = {}
    for language in ("c", "python"):
        runtime = tmp_path_factory.mktemp(f"programs-{language}")
        runtime.chmod(0o755)
        (runtime / "gateway.sock").symlink_to(ssh_server.socket)
        p = dataclasses.replace(
            sshd.paths(ssh_server.var_dir),
            runtime_dir=runtime,
            keys_program=runtime / "hostsite-keys",
            shell_program=runtime / "hostsite-shell",
            socket=runtime / "gateway.sock",
        )
        assert sshd.install_programs(p, language) == language
        dirs[language] = runtime
    return dirs


def _keys(runtime, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(runtime / "hostsite-keys"), *args], capture_output=True, timeout=10, env={})


def test_both_keys_programs_answer_alike(ssh_server, twins):
    person = ssh_server.make_key("twin-person")
    deploy = ssh_server.make_key("twin-deploy")
    stranger = ssh_server.make_key("twin-stranger")
    add_key(person, user=UserFactory())
    add_key(deploy, repository=RepositoryFactory(), read_write=True)
    cases = [
        (person.fingerprint, person.key_type, person.key_data),
        (deploy.fingerprint, deploy.key_type, deploy.key_data),
        (stranger.fingerprint, stranger.key_type, stranger.key_data),  # unknown: nothing
        (person.fingerprint, "ssh-rsa", person.key_data),  # another type: nothing
        (person.fingerprint, person.key_type, deploy.key_data),  # another blob: nothing
        ('SHA256:x"; rm -rf /', person.key_type, person.key_data),  # junk: nothing
    ]
    printed = 0
    for fingerprint, key_type, key_data in cases:
        answers = {
            language: _keys(runtime, "git", fingerprint, key_type, key_data)
            for language, runtime in twins.items()
        }
        c, py = answers["c"], answers["python"]
        assert c.returncode == py.returncode == 0
        assert c.stdout.replace(bytes(twins["c"]), b"DIR") == py.stdout.replace(
            bytes(twins["python"]), b"DIR"
        )
        printed += bool(c.stdout)
    assert printed == 2
    assert _keys(twins["c"], "too", "few").stdout == _keys(twins["python"], "too", "few").stdout == b""


@pytest.mark.parametrize(
    "command",
    [
        b"git-upload-pack '/alice/proj.git'",
        b"git-upload-pack 'caf\xc3\xa9/\xe2\x82\xac.git'",  # UTF-8 passes as is
        b"git-upload-pack '\xff\xfe/x.git'",  # not UTF-8: Python's surrogates
        b'quote " backslash \\ tab \t bell \x07 del \x7f',
        b"\xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80",  # a surrogate, an overlong, past U+10FFFF
        None,
    ],
)
def test_both_shells_hand_the_gateway_the_same_session(ssh_server, twins, command):
    key = ssh_server.make_key(f"twin-shell-{uuid.uuid4().hex[:8]}")
    row = add_key(key, user=UserFactory())
    env = {"GIT_PROTOCOL": "version=2", "SSH_CONNECTION": "192.0.2.7 51000 127.0.0.1 2222"}
    if command is not None:
        env["SSH_ORIGINAL_COMMAND"] = command  # type: ignore[assignment]
    reports = {}
    for language, runtime in twins.items():
        result = subprocess.run(
            [str(runtime / "hostsite-shell"), f"key-{row.pk}"],
            env={k.encode(): v if isinstance(v, bytes) else v.encode() for k, v in env.items()},
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert result.returncode == 0, result.stderr
        reports[language] = json.loads(result.stdout.splitlines()[0])
    assert reports["c"] == reports["python"]
    assert reports["c"]["key_id"] == row.pk and reports["c"]["remote"] == "192.0.2.7"
    if command is not None:
        assert reports["c"]["command"] == os.fsdecode(command)


def test_both_shells_refuse_a_forged_argument(twins):
    for runtime in twins.values():
        result = subprocess.run(
            [str(runtime / "hostsite-shell"), "key-1; id"], capture_output=True, timeout=10, env={}
        )
        assert result.returncode == 1
        assert result.stderr == b"hostsite: this account only serves git over SSH\n"
