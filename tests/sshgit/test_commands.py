"""What an SSH client may ask for: parsed as data, refused with one line otherwise."""

from __future__ import annotations

import pytest

from sshgit.commands import CommandRefused, GitCommand, parse


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git-upload-pack '/alice/proj.git'", GitCommand("upload-pack", "alice", "proj")),
        ("git-upload-pack 'alice/proj.git'", GitCommand("upload-pack", "alice", "proj")),
        ("git-receive-pack '/alice/proj'", GitCommand("receive-pack", "alice", "proj")),
        ("git-upload-archive '/alice/proj.git'", GitCommand("upload-archive", "alice", "proj")),
        ("git upload-pack '/alice/proj.git/'", GitCommand("upload-pack", "alice", "proj")),
        ("git-upload-pack alice/proj.git", GitCommand("upload-pack", "alice", "proj")),
        ("git-upload-pack '/Alice/My_Proj.v2.git'", GitCommand("upload-pack", "Alice", "My_Proj.v2")),
        # git's own quoting of a quote: 'a'\''b' (never valid in a name, refused below)
    ],
)
def test_git_commands(command, expected):
    assert parse(command) == expected


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("ls", "'ls' is not served"),
        ("sh -c id", "'sh' is not served"),
        ("scp -t /tmp", "'scp' is not served"),
        ("git-upload-pack", "takes one repository path"),
        ("git-upload-pack '/alice/proj.git'; rm -rf /", "shell syntax is not interpreted"),
        ("git-upload-pack '/alice/proj.git' | cat", "shell syntax is not interpreted"),
        ("git-upload-pack '$(id)/proj.git'", "not a repository path"),
        ("git-upload-pack '`id`/proj.git'", "not a repository path"),
        ("git-upload-pack '/alice/../bob/proj.git'", "not a repository path"),
        ("git-upload-pack '../../etc/passwd'", "not a repository path"),
        ("git-upload-pack '/srv/repos/alice/proj.git'", "not a repository path"),
        ("git-upload-pack '~/proj.git'", "not a repository path"),
        ("git-upload-pack '/alice/..'", "not a repository path"),
        ("git-upload-pack '/alice/proj.git.git'", "not a repository path"),
        ("git-upload-pack 'alice/proj\nid'", "control characters"),
        ("git-upload-pack 'alice/proj\x00'", "control characters"),
        ("git-upload-pack 'unterminated", "cannot parse"),
        ("git-upload-pack " + "a" * 5000, "too long"),
        ("git-upload-pack 'alice'\\''s/proj.git'", "not a repository path"),
    ],
)
def test_refusals_are_one_clear_line(command, says):
    with pytest.raises(CommandRefused) as refused:
        parse(command)
    message = str(refused.value)
    assert says in message
    assert "\n" not in message and "\x00" not in message
