"""The hooks' git runner (repos/hooks/hookgit.py): no subprocess, yet input and output of any
size at once (a push of thousands of objects is walked and checked through it), and a git that
stops reading early ends the exchange instead of hanging it."""

from __future__ import annotations

import os

from repos.hooks import hookgit


def test_large_input_and_output_at_once(tmp_path, git_home):
    gitdir = tmp_path / "r.git"
    assert hookgit.run("init", "--quiet", "--bare", str(gitdir), env=git_home).returncode == 0
    env = {**git_home, "GIT_DIR": str(gitdir)}
    ids = [f"{n:040x}" for n in range(60_000)]  # 2.4 MB in, 2.8 MB out: far past a pipe's buffer
    done = hookgit.run("cat-file", "--batch-check", input="".join(f"{i}\n" for i in ids), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{i} missing" for i in ids]


def test_a_git_that_reads_nothing_ends_the_exchange(tmp_path, git_home):
    done = hookgit.run("version", input="x\n" * 200_000, env=git_home)
    assert done.returncode == 0 and done.stdout.startswith("git version")
    assert (
        hookgit.run("rev-parse", "--verify", "nope", env={**git_home, "GIT_DIR": os.devnull}).returncode != 0
    )
