"""Every hook, installed as a repository gets it and run as git runs it (the script's own
`python -IS` line, git's minimal environment, the bare repository as GIT_DIR), fed hostile
input: stdin that is not UTF-8, lines with fields missing, overlong lines, NUL, CRLF, binary
noise, nothing at all; pushes whose HOSTSITE_* variables are missing or garbage; arguments no
hook takes. The hooks that decide (pre-receive, proc-receive) relay to this process, where the
push is registered as the pipeline registers it (gitcore.hooksocket). Each either does its work
or ends with one clear `hostsite: ...` line, never a Python traceback (git relays a hook's
output to the pusher). And post-receive records every update it can read, whatever lines come
beside them: a bad line never costs a push its record."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitcore import hooksocket
from gitcore.git import git_environment, run_git
from repos import push_spool, pushes, storage
from repos.pipeline.push import hook_handlers
from tests.factories import RepositoryFactory, UserFactory
from tests.gitutil import git
from tests.repos import push_support

pytestmark = pytest.mark.django_db
ZERO = "0" * 40
spool = push_support.spool  # the fixture: the session's spool directory, emptied
TIMEOUT = 60


@pytest.fixture
def repo(source_repo, git_home):
    """A hosted repository with two commits on trunk, as a push left it."""
    repo = RepositoryFactory()
    git(
        git_home,
        "--git-dir",
        str(repo.disk_path),
        "fetch",
        "-q",
        "--no-tags",
        str(source_repo),
        "trunk:refs/heads/trunk",
    )
    repo.new = run_git(["rev-parse", "trunk"], repo=repo.disk_path).text.strip()
    repo.old = run_git(["rev-parse", "trunk~1"], repo=repo.disk_path).text.strip()
    return repo


def run_hook(repo, name: str, stdin: bytes, env: dict[str, str], args: tuple[bytes, ...] = ()):
    """The installed hook as receive-pack starts it: GIT_DIR, the bare repository as the
    working directory, the environment git runs with plus `env`; a push with `env` registered
    for the hooks this process answers, as the pipeline registers one (repos.pipeline.push)."""
    path = storage.hooks_dir() / name
    with hooksocket.open_push(repo.disk_path, env, hook_handlers()) as variables:
        full = {**git_environment(), "GIT_DIR": ".", **env, **variables}
        return subprocess.run(
            [str(path), *args],
            input=stdin,
            env=full,
            cwd=repo.disk_path,
            capture_output=True,
            timeout=TIMEOUT,
        )


def said(result) -> list[str]:
    """What the hook told the pusher (stdout and stderr both reach git's client), checked to
    be lines of its own: never a traceback."""
    text = (result.stdout + result.stderr).decode("utf-8", "replace")
    assert "Traceback" not in text and 'File "' not in text and "Error:" not in text, text
    return [line for line in text.splitlines() if line]


def refused_once(result) -> str:
    """A refusal: a failing exit and exactly one `hostsite:` line on stderr."""
    lines = said(result)
    assert result.returncode == 1, (result.returncode, lines)
    stderr = result.stderr.decode("utf-8", "replace").splitlines()
    assert len(stderr) == 1 and stderr[0].startswith("hostsite: "), stderr
    return stderr[0]


def pusher_env(repo, user, spool: Path, updates: Path) -> dict[str, str]:
    """What the pipeline hands the hooks of a maintainer's push (repos.pipeline.push._hook_env)."""
    return {
        "HOSTSITE_PUSHER": user.username,
        "HOSTSITE_PUSHER_ID": str(user.pk),
        "HOSTSITE_ROLE": "maintainer",
        "HOSTSITE_REPO_ID": str(repo.pk),
        "HOSTSITE_REF_UPDATES_FILE": str(updates),
        "HOSTSITE_PUSH_SPOOL_DIR": str(spool),
        "HOSTSITE_PUSH_ID": push_spool.new_spool_id(),
        "HOSTSITE_PUSH_PROTOCOL": "http",
        "HOSTSITE_SPOOL_WRITER_PID": str(os.getpid()),
    }


GARBAGE_ENV = {
    "HOSTSITE_PUSHER": "\udcff\n../x",
    "HOSTSITE_PUSHER_ID": "-1e9x",
    "HOSTSITE_ROLE": "root\0",
    "HOSTSITE_REPO_ID": "../../etc",
    "HOSTSITE_REF_UPDATES_FILE": "/nonexistent/dir/updates",
    "HOSTSITE_PUSH_SPOOL_DIR": "/proc/self/status/spool",
    "HOSTSITE_PUSH_ID": "z" * 32,
    "HOSTSITE_SPOOL_WRITER_PID": "pid",
    "HOSTSITE_WORKSPACE_REF_COUNT": "lots",
    "HOSTSITE_WORKSPACE_REF_LIMIT": "-5",
    "HOSTSITE_PROTECTED": ":::,,:1:",
    "HOSTSITE_DEFAULT_BRANCH": "",
    "HOSTSITE_BANNED": ",,,",
    "HOSTSITE_HIDDEN_PREFIXES": "refs/\xff refs/users/",
    "HOSTSITE_NAMELESS_HEADS": "::: a:b:c",
    "HOSTSITE_MAP_BRANCHES": "yes",
    "HOSTSITE_NEXT_URL": "javascript:\x1b[2J",
    "HOSTSITE_NEXT_PROPOSALS": "1 x y\n-1 2 3 4\n\n",
    "HOSTSITE_NEXT_MAPPED": "-3",
    "GIT_PUSH_OPTION_COUNT": "99999999999999999999",
    "GIT_PUSH_OPTION_0": "\x00\x1b[31mred",
}
# The environment values a process can hold: no NUL, and bytes that are not UTF-8 as surrogates.
GARBAGE_ENV = {k: v.replace("\0", "") for k, v in GARBAGE_ENV.items()}
ENVIRONMENTS = {"none": {}, "garbage": GARBAGE_ENV}


def stdin_cases(repo) -> dict[str, bytes]:
    line = f"{repo.old} {repo.new} refs/heads/trunk"
    return {
        "empty": b"",
        "not UTF-8": f"{ZERO} {repo.new} refs/heads/bad".encode() + b"\xff\xfe\n",
        "fields missing": f"{repo.old} {repo.new}\n".encode(),
        "one field": b"refs/heads/trunk\n",
        "overlong": f"{ZERO} {repo.new} refs/heads/{'a' * 100_000}\n".encode(),
        "NUL": f"{ZERO} {repo.new} refs/heads/a\0b\n".encode(),
        "CRLF": f"{line}\r\n".encode(),
        "noise": bytes(range(256)) * 4,
        "no newline": line.encode(),
    }


CASES = [
    "empty",
    "not UTF-8",
    "fields missing",
    "one field",
    "overlong",
    "NUL",
    "CRLF",
    "noise",
    "no newline",
]


# --- pre-receive ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("environment", ["pusher", "none", "garbage"])
def test_pre_receive_judges_or_refuses_in_one_line(repo, tmp_path, case, environment):
    env = (
        pusher_env(repo, repo.owner, tmp_path / "spool", tmp_path / "updates")
        if environment == "pusher"
        else ENVIRONMENTS[environment]
    )
    result = run_hook(repo, "pre-receive", stdin_cases(repo)[case], env, args=(b"--help", b"\xff"))
    lines = said(result)
    if environment == "none" or (environment == "garbage" and case != "empty"):
        refused_once(result)
    elif case in ("empty", "no newline"):
        assert result.returncode == 0 and lines == [], lines  # nothing, or a fast-forward of trunk
    else:
        line = refused_once(result)
        if case == "not UTF-8":
            assert line == (
                "hostsite: refs/heads/bad\\xff\\xfe is not UTF-8 (\\xNN marks each byte that is not); "
                "push it under a UTF-8 name"
            )


def test_pre_receive_lets_a_name_that_is_not_utf8_be_deleted_and_nothing_else(repo, tmp_path):
    env = pusher_env(repo, repo.owner, tmp_path / "spool", tmp_path / "updates")
    name = b"refs/heads/imported-caf\xe9"
    deletion = f"{repo.new} {ZERO} ".encode() + name + b"\n"
    assert run_hook(repo, "pre-receive", deletion, env).returncode == 0
    # Under the name it is judged by (escaped), the policy refuses what it refuses any name:
    # a reader may not delete a branch.
    result = run_hook(repo, "pre-receive", deletion, {**env, "HOSTSITE_ROLE": "reader"})
    assert "refs/heads/imported-caf\\xe9" in refused_once(result)
    moved = f"{repo.old} {repo.new} ".encode() + name + b"\n"
    assert "imported-caf\\xe9 is not UTF-8" in refused_once(run_hook(repo, "pre-receive", moved, env))


# --- post-receive -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("environment", ["none", "garbage"])
def test_post_receive_without_its_environment_says_so_in_a_line_at_most(repo, case, environment):
    result = run_hook(repo, "post-receive", stdin_cases(repo)[case], ENVIRONMENTS[environment], args=(b"-x",))
    lines = said(result)
    assert result.returncode == 0, lines  # the refs moved already: never a failure
    assert all(line.startswith("hostsite: ") for line in lines) and len(lines) <= 1, lines


def test_post_receive_records_every_readable_update_whatever_lines_come_beside(repo, spool, tmp_path):
    user = UserFactory(username="pia")
    updates = tmp_path / "updates"
    env = pusher_env(repo, user, spool, updates)
    stdin = b"".join(
        [
            f"{repo.old} {repo.new} refs/heads/trunk\n".encode(),
            f"{ZERO} {repo.new} refs/heads/caf".encode() + b"\xe9\n",  # deleted later, say
            f"{ZERO} {repo.new} refs/heads/a\0b\n".encode(),
            f"{ZERO} {repo.new} refs/heads/{'a' * 100_000}\n".encode(),
            bytes(range(256)),
            b"\n",
            f"{ZERO} {repo.new} refs/heads/crlf\r\n".encode(),
        ]
    )
    result = run_hook(repo, "post-receive", stdin, env)
    assert result.returncode == 0 and said(result) == []
    path = push_spool.spool_path(repo.pk, env["HOSTSITE_PUSH_ID"])
    push = push_spool.record_file(path, push_spool.read(path))
    assert push is not None and not path.exists()
    assert sorted((u.ref, u.old, u.new) for u in push.ref_updates.all()) == [
        ("refs/heads/caf\ufffd", ZERO, repo.new),  # as the push log records such a name
        ("refs/heads/crlf", ZERO, repo.new),
        ("refs/heads/trunk", repo.old, repo.new),
    ]

    # When the spool cannot be written, the updates file the web process falls back to holds them.
    env = {
        **pusher_env(repo, user, tmp_path / "file" / "spool", updates),
        "HOSTSITE_PUSH_ID": push_spool.new_spool_id(),
    }
    (tmp_path / "file").write_text("a file where the spool's directory should be")
    result = run_hook(repo, "post-receive", stdin, env)
    assert result.returncode == 0
    assert said(result) == [
        "hostsite: could not spool the record of this push (Not a directory); recording it directly"
    ]
    recorded = pushes.parse_updates(updates.read_text(encoding="utf-8"))
    assert sorted(u.ref for u in recorded) == ["refs/heads/caf\ufffd", "refs/heads/crlf", "refs/heads/trunk"]


# --- proc-receive -----------------------------------------------------------------------------


def pkt(data: bytes) -> bytes:
    return f"{len(data) + 4:04x}".encode() + data


def negotiation(capabilities: bytes = b"atomic push-options") -> bytes:
    return pkt(b"version=1\0" + capabilities + b"\n") + b"0000"


PROC_INPUTS = {
    "empty": b"",
    "length not hex": b"zzzzversion=1",
    "length under 4": b"0003",
    "packet cut short": b"0040version=1",
    "no flush after the version": pkt(b"version=1\n"),
    "commands cut short": negotiation() + pkt(b"0" * 40),
    "a command with fields missing": negotiation() + pkt(b"0" * 40 + b" refs/heads/x\n") + b"0000",
    "a command with a bad id": negotiation()
    + pkt(b"x" * 40 + b" " + b"0" * 40 + b" refs/heads/x\n")
    + b"0000",
    "options cut short": negotiation() + pkt(b"0" * 40 + b" " + b"1" * 40 + b" refs/for/main\n") + b"0000",
}


@pytest.mark.parametrize("case", list(PROC_INPUTS))
@pytest.mark.parametrize("environment", ["none", "garbage"])
def test_proc_receive_refuses_input_that_is_not_its_protocol_in_one_line(repo, case, environment):
    before = run_git(["for-each-ref"], repo=repo.disk_path).stdout
    result = run_hook(repo, "proc-receive", PROC_INPUTS[case], ENVIRONMENTS[environment], args=(b"\xff",))
    line = refused_once(result)
    assert line.startswith("hostsite: proc-receive: git's input was not understood"), line
    assert run_git(["for-each-ref"], repo=repo.disk_path).stdout == before


def test_proc_receive_answers_every_command_byte_for_byte(repo):
    """A well-formed exchange with names that are not UTF-8 and no pusher: each command gets its
    refusal under the exact name git sent, and nothing is written."""
    names = [b"refs/heads/bad\xff\xfe", b"refs/for/main/\xe9", "refs/users/someone/é".encode()]
    commands = b"".join(pkt(f"{ZERO} {repo.new} ".encode() + name + b"\n") for name in names)
    before = run_git(["for-each-ref"], repo=repo.disk_path).stdout
    stdin = negotiation(b"push-options") + commands + b"0000" + pkt(b"topic=\xff\x1b[2J") + b"0000"
    result = run_hook(repo, "proc-receive", stdin, {})
    said(result)
    assert result.returncode == 0, result.stderr
    for name in names:
        assert pkt(b"ng " + name + b" pushes must go through hostsite's HTTP endpoint") in result.stdout
    assert run_git(["for-each-ref"], repo=repo.disk_path).stdout == before


def test_proc_receive_with_a_garbage_environment_refuses_what_it_cannot_place(repo):
    """Nameless pushes for branches that do not exist, from a pusher whose name is garbage: each
    is refused with its reason, nothing is written."""
    names = [b"refs/for/main/\xe9", b"refs/for/nowhere"]
    commands = b"".join(pkt(f"{ZERO} {repo.new} ".encode() + name + b"\n") for name in names)
    before = run_git(["for-each-ref"], repo=repo.disk_path).stdout
    result = run_hook(repo, "proc-receive", negotiation(b"") + commands + b"0000", GARBAGE_ENV)
    said(result)
    assert result.returncode == 0, result.stderr
    for name in names:
        assert b"ng " + name + b" no branch " in result.stdout
    assert run_git(["for-each-ref"], repo=repo.disk_path).stdout == before
