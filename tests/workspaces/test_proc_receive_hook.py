"""The installed proc-receive hook, run as receive-pack runs it (its pkt-line protocol on stdin)
on a real repository, answered by workspaces' handler in this process as a push registers it
(gitcore.hooksocket): the compare-and-swap cases a real push cannot time."""

from __future__ import annotations

import subprocess

import pytest

from gitcore import hooksocket
from repos import gitaccess, storage
from tests.gitutil import git

pytestmark = pytest.mark.django_db
Z = "0" * 40


def pkt(text: str) -> bytes:
    return f"{len(text) + 4:04x}".encode() + text.encode()


def read_pkts(data: bytes) -> list[str | None]:
    out: list[str | None] = []
    pos = 0
    while pos < len(data):
        n = int(data[pos : pos + 4], 16)
        out.append(None if n == 0 else data[pos + 4 : pos + n].decode())
        pos += 4 if n == 0 else n
    return out


@pytest.fixture
def repo(tmp_path, git_home):
    path = tmp_path / "r.git"
    git(git_home, "init", "--quiet", "--bare", "-b", "main", str(path))
    work = tmp_path / "w"
    git(git_home, "init", "--quiet", "-b", "main", str(work))
    shas = {}
    for name in ("a", "b"):
        git(git_home, "commit", "--quiet", "--allow-empty", "-m", name, cwd=work)
        shas[name] = git(git_home, "rev-parse", "HEAD", cwd=work).stdout.strip()
    git(git_home, "checkout", "--quiet", "--orphan", "other", cwd=work)
    git(git_home, "commit", "--quiet", "--allow-empty", "-m", "c", cwd=work)
    shas["c"] = git(git_home, "rev-parse", "HEAD", cwd=work).stdout.strip()
    git(git_home, "push", "--quiet", str(path), "main", "other", cwd=work)
    return path, shas, git_home


def run_hook(repo, commands, *, caps="push-options", options=(), env=None):
    path, _shas, git_home = repo
    stdin = pkt(f"version=1\0{caps}") + b"0000"
    stdin += b"".join(pkt(f"{old} {new} {ref}") for old, new, ref in commands) + b"0000"
    if "push-options" in caps:
        stdin += b"".join(pkt(o) for o in options) + b"0000"
    push_env = {
        "HOSTSITE_PUSHER": "alice",
        "HOSTSITE_ROLE": "reader",
        "HOSTSITE_MAP_BRANCHES": "1",
        **(env or {}),
    }
    with hooksocket.open_push(path, push_env, gitaccess.hook_handlers()) as variables:
        result = subprocess.run(
            [str(storage.install_hooks() / "proc-receive")],
            input=stdin,
            env={"PATH": git_home["PATH"], "GIT_DIR": str(path), **variables},
            capture_output=True,
        )
    assert result.returncode == 0, result.stderr
    return [line for line in read_pkts(result.stdout) if line and not line.startswith("version=")]


def tip(repo, ref):
    path, _shas, git_home = repo
    return git(
        git_home, "--git-dir", str(path), "rev-parse", "--verify", "--quiet", ref, check=False
    ).stdout.strip()


def test_a_stale_old_is_judged_against_the_tip(repo):
    _path, s, _env = repo
    # Shown at a, moved to b meanwhile: a push of c (not containing b) is refused, naming b...
    run_hook(repo, [(Z, s["b"], "refs/heads/fix")])
    assert tip(repo, "refs/users/alice/fix") == s["b"]
    lines = run_hook(repo, [(s["a"], s["c"], "refs/heads/fix")])
    assert lines[0].startswith("ng refs/heads/fix refs/users/alice/fix is at " + s["b"][:12])
    assert f"git push -o force origin {s['c']}:refs/heads/fix" in lines[0]
    assert tip(repo, "refs/users/alice/fix") == s["b"]
    # ...and a stale deletion too.
    lines = run_hook(repo, [(s["a"], Z, "refs/heads/fix")])
    assert lines[0].startswith("ng refs/heads/fix") and tip(repo, "refs/users/alice/fix") == s["b"]
    # The current tip as old: the client's own fast-forward check (or --force) decided.
    lines = run_hook(repo, [(s["b"], s["c"], "refs/heads/fix")])
    assert lines == [
        "ok refs/heads/fix",
        "option refname refs/users/alice/fix",
        f"option old-oid {s['b']}",
        f"option new-oid {s['c']}",
        "option forced-update",
    ]


def test_limit_counts_creations_of_this_push(repo):
    _path, s, _env = repo
    env = {"HOSTSITE_WORKSPACE_REF_LIMIT": "2", "HOSTSITE_WORKSPACE_REF_COUNT": "1"}
    lines = run_hook(repo, [(Z, s["a"], "refs/heads/one"), (Z, s["a"], "refs/heads/two")], env=env)
    assert lines[0] == "ok refs/heads/one" and "already holds 2 refs" in lines[-1]
    assert tip(repo, "refs/users/alice/two") == ""


def test_atomic_all_or_nothing(repo):
    _path, s, _env = repo
    commands = [(Z, s["a"], "refs/heads/x"), (Z, s["a"], "refs/users/bob/y"), (Z, s["c"], "refs/heads/main")]
    env = {"HOSTSITE_PUSH_HIDDEN": "refs/users/bob/y"}
    lines = run_hook(repo, commands, caps="push-options atomic", env=env)
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["ng", "refs/heads/x"],
        ["ng", "refs/users/bob/y"],
        ["ng", "refs/heads/main"],
    ]
    assert "deny updating a hidden ref" in lines[1]
    assert tip(repo, "refs/users/alice/x") == "" and tip(repo, "refs/heads/main") == s["b"]
    # A maintainer's atomic push: the branch (compared with what the client sent) and another's ref.
    env = {"HOSTSITE_ROLE": "maintainer", "HOSTSITE_PUSHER": "mona"}
    commands = [(s["b"], s["c"], "refs/heads/main"), (Z, s["a"], "refs/users/bob/y")]
    lines = run_hook(repo, commands, caps="push-options atomic", env=env)
    assert [line for line in lines if line.startswith(("ok", "ng"))] == [
        "ok refs/heads/main",
        "ok refs/users/bob/y",
    ]
    assert tip(repo, "refs/heads/main") == s["c"] and tip(repo, "refs/users/bob/y") == s["a"]


def test_a_name_clash_says_so(repo):
    _path, s, _env = repo
    assert run_hook(repo, [(Z, s["a"], "refs/heads/x")])[0] == "ok refs/heads/x"
    lines = run_hook(repo, [(Z, s["a"], "refs/heads/x/y")])
    assert lines[0].startswith("ng refs/heads/x/y ") and "refs/users/alice/x' exists" in lines[0]
    assert "push under another name, or delete the other ref first" in lines[0]
