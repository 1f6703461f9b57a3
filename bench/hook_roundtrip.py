"""A hook's round trip to the application (gitcore.hooksocket), against the standalone hook it
replaced, side by side.

1. Builds a bare repository with a few commits (git only; no server, no database).
2. Registers a push in this process as the pipeline does (bench.harness.hookserve): the
   policy's pre-receive (repos.hooks.pre_receive), and a handler that answers at once.
3. Times, interleaved, N runs of each:
   - the round trip alone, from this process: connect, send the hook's request and one ref
     update, read the answer to its exit status (what a hook adds to a push beyond starting
     an interpreter), for the no-op handler and for the policy (an admin's fast-forward of
     main; a reader creating a workspace ref);
   - the installed pre-receive as git runs it (the relay client, `python -IS`), same cases;
   - the standalone pre-receive of `--before` (a git revision: the hook that decided in its
     own process from HOSTSITE_* variables), same cases and environment;
   - `python -IS -c pass`, the floor any Python hook pays.

Target: the round trip with the policy answering, median <= 5 ms. The whole hook is reported
as a ratio to the standalone one, measured in the same rounds.

    .venv/bin/python -m bench.hook_roundtrip --runs 200
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import BASE_DIR, GIT, PY, ZERO_OID, say
from gitcore import hookclient, hooksocket
from repos.hooks import pre_receive, refspace

TARGET_MS = 5.0
STANDALONE = ("pre_receive.py", "pushpolicy.py", "updates.py", "refnames.py", "failsafe.py", "hookgit.py",
              "contentguard.py", "refspace.py")  # fmt: skip


def git(*args: str, cwd: Path | None = None) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd or "/"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@x"}  # fmt: skip
    return subprocess.run([GIT, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def setup(tmp: Path, before: str) -> tuple[Path, Path, dict[str, str]]:
    repo, work = tmp / "r.git", tmp / "w"
    git("init", "--quiet", "--bare", "-b", "main", str(repo))
    git("init", "--quiet", "-b", "main", str(work))
    ids = []
    for n in range(3):
        git("commit", "--quiet", "--allow-empty", "-m", f"c{n}", cwd=work)
        ids.append(git("rev-parse", "HEAD", cwd=work).strip())
    git("push", "--quiet", str(repo), f"{ids[1]}:refs/heads/main", cwd=work)
    git("push", "--quiet", str(repo), f"{ids[2]}:refs/heads/next", cwd=work)
    old_hooks = tmp / "standalone"
    old_hooks.mkdir()
    for name in STANDALONE:
        text = git("show", f"{before}:repos/hooks/{name}", cwd=BASE_DIR)
        target = old_hooks / ("pre-receive" if name == "pre_receive.py" else name)
        target.write_text((f"#!{sys.executable} -IS\n" if name == "pre_receive.py" else "") + text)
        target.chmod(0o755)
    client = tmp / "pre-receive"
    client.write_text(f"#!{sys.executable} -IS\n" + Path(hookclient.__file__).read_text())
    client.chmod(0o755)
    lines = {
        "admin fast-forwards main": f"{ids[1]} {ids[2]} refs/heads/main\n",
        "reader creates a workspace ref": f"{ZERO_OID} {ids[2]} {refspace.workspace_ref('carol', 'fix')}\n",
    }
    return repo, client, {"old_hooks": str(old_hooks), **lines}


def env_for(repo: Path, case: str) -> dict[str, str]:
    admin = case.startswith("admin")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_DIR": str(repo),
        "HOSTSITE_PUSHER": "bench" if admin else "carol",
        "HOSTSITE_ROLE": "admin" if admin else "reader",
        "HOSTSITE_DEFAULT_BRANCH": "main",
        "HOSTSITE_WORKSPACE_REF_COUNT": "0",
    }


def exchange(variables: dict[str, str], hook: str, stdin: bytes) -> int:
    """What the client does, from this process: the request, the answer to its exit status."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect("\0" + variables[hooksocket.ENV_SOCKET][1:])
        fields = [variables[hooksocket.ENV_TOKEN].encode(), hook.encode(), b"0"]
        payload = b"\0".join(fields)
        conn.sendall(struct.pack(">I", len(payload)) + payload + stdin)
        conn.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
        while received:
            kind, size = received[:1], struct.unpack(">I", received[1:5])[0]
            if kind == b"x":
                return int(received[5 : 5 + size])
            received = received[5 + size :]
        raise RuntimeError("no exit status")
    finally:
        conn.close()


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t0)


def run_process(argv: list[str], env: dict[str, str], stdin: bytes, cwd: Path) -> None:
    done = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} refused: {done.stderr.decode(errors='replace')}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--before", default="8d3259e", help="the revision whose standalone pre-receive to compare"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hook-bench-") as tmpdir:
        tmp = Path(tmpdir)
        repo, client, info = setup(tmp, args.before)
        old_hook = Path(info["old_hooks"]) / "pre-receive"
        cases = ("admin fast-forwards main", "reader creates a workspace ref")
        pushes = {case: env_for(repo, case) for case in cases}
        handlers = {"pre-receive": pre_receive.handle, "noop": lambda call: 0}
        variables = {case: hooksocket.register(repo, pushes[case], handlers) for case in cases}
        steps = {"round trip, no-op handler": lambda: exchange(variables[cases[0]], "noop", b"")}
        for case in cases:
            line = info[case].encode()
            steps[f"round trip, policy: {case}"] = lambda c=case, s=line: exchange(
                variables[c], "pre-receive", s
            )
            steps[f"relay hook process: {case}"] = lambda c=case, s=line: run_process(
                [str(client)], {**pushes[c], **variables[c]}, s, repo
            )
            steps[f"standalone hook process ({args.before}): {case}"] = lambda c=case, s=line: run_process(
                [str(old_hook)], pushes[c], s, repo
            )
        steps["python -IS -c pass"] = lambda: run_process([PY, "-IS", "-c", "pass"], {}, b"", repo)
        for step in steps.values():  # warm: the first connection starts the listener
            step()
        samples: dict[str, list[float]] = {name: [] for name in steps}
        names = list(steps)
        say(f"{args.runs} rounds of {len(names)} steps, interleaved")
        for i in range(args.runs):
            for name in names if i % 2 == 0 else reversed(names):
                samples[name].append(timed(steps[name]))
    print(f"load average at the end: {os.getloadavg()[0]:.2f} (2-core machine)")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    for name, values in samples.items():
        print(f"{name:70s} median {medians[name]:7.2f} ms  (min {min(values):.2f}, max {max(values):.2f})")
    for case in cases:
        ratio = (
            medians[f"relay hook process: {case}"]
            / medians[f"standalone hook process ({args.before}): {case}"]
        )
        print(f"relay hook / standalone hook, {case}: {ratio:.2f}x")
    worst = max(medians[f"round trip, policy: {case}"] for case in cases)
    verdict = "PASS" if worst <= TARGET_MS else "MISS"
    print(
        f"{verdict}: the round trip with the policy answering, median {worst:.2f} ms (target <= {TARGET_MS} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
