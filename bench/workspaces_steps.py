"""bench.workspaces' server-side steps, run directly: the installed pre-receive hook per case,
and the git steps of a push that read every ref."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from bench.harness import GIT, PY, ZERO_OID, Git, SetupError, summarize, time_runs
from bench.harness.hookserve import served
from bench.workspaces_report import REPOS
from repos.hooks import refspace


def measure_hooks(hs: dict, git: Git, runs: int) -> dict:
    hook = hs["hooks_dir"] / "pre-receive"
    if not os.access(hook, os.X_OK):
        raise SetupError(f"{hook} is missing or not executable")
    ws = hs["dirs"]["ws"]
    commit = git.run("--git-dir", str(ws), "rev-parse", "main~5").strip()
    main_new = git.run("--git-dir", str(ws), "rev-parse", "main").strip()
    main_old = git.run("--git-dir", str(ws), "rev-parse", "main~1").strip()

    def env(repo: str, pusher: str, role: str, ref_count: int | None = None) -> dict[str, str]:
        # What repos/pipeline/ and workspaces/access/ give the hook for these rules;
        # for a push that creates workspace refs the view also passes the pusher's ref count.
        extra = {} if ref_count is None else {"HOSTSITE_WORKSPACE_REF_COUNT": str(ref_count)}
        return served(
            extra
            | {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOSTSITE_PUSHER": pusher,
                "HOSTSITE_ROLE": role,
                "HOSTSITE_REPO_ID": "1",
                "HOSTSITE_DEFAULT_BRANCH": "main",
                "HOSTSITE_PROTECTED": "",
                "HOSTSITE_MAINTAINERS_EDIT": "1",
                "HOSTSITE_FROZEN": "",
                "HOSTSITE_WORKSPACE_REF_LIMIT": "1000",
                "GIT_DIR": str(hs["dirs"][repo]),
            }
        )

    cases = {
        f"carol creates {refspace.WORKSPACES}carol/new-<i>, bench/ws": (
            "ws", env("ws", "carol", "reader", 0), lambda i: f"{ZERO_OID} {commit} {refspace.WORKSPACES}carol/new-{i}\n"),
        "same, bench/plain (no workspace refs)": (
            "plain", env("plain", "carol", "reader", 0), lambda i: f"{ZERO_OID} {commit} {refspace.WORKSPACES}carol/new-{i}\n"),
        "bench (admin) fast-forwards main, bench/ws": (
            "ws", env("ws", "bench", "admin"), lambda i: f"{main_old} {main_new} refs/heads/main\n"),
    }  # fmt: skip
    samples: dict[str, list[float]] = {name: [] for name in cases}
    failures: dict[str, int] = dict.fromkeys(cases, 0)
    last_error: dict[str, str] = dict.fromkeys(cases, "")
    names = list(cases)
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):  # interleaved, order alternating
            repo, henv, line = cases[name]
            r = time_runs([str(hook)], env=henv, n=1, stdin=line(i).encode(), cwd=hs["dirs"][repo])
            samples[name].append(r["samples_ms"][0])
            if r["failures"]:
                failures[name] += 1
                last_error[name] = r["last_error"]
    results = {}
    for name in names:
        results[name] = summarize(samples[name]) | {
            "failures": failures[name],
            "last_error": last_error[name],
        }
    floor = time_runs([PY, "-IS", "-c", "pass"], env=cases[names[0]][1], n=runs)
    results["python -IS -c pass (floor)"] = summarize(floor["samples_ms"]) | {"failures": floor["failures"]}
    fer = time_runs([GIT, "for-each-ref", "--format=x", refspace.workspace_prefix("carol")], env=cases[names[0]][1],
                    n=runs, cwd=ws)  # fmt: skip
    results[f"git for-each-ref {refspace.WORKSPACES}carol/, bench/ws"] = summarize(fer["samples_ms"]) | {
        "failures": fer["failures"]
    }
    return results


# --- where the time goes -----------------------------------------------------------------------


def measure_git_steps(hs: dict, git: Git, tmp: Path, runs: int) -> dict:
    """The server-side git steps of a contributor's push that could read every ref, run
    directly on both repositories with the platform's clean git environment, as the platform
    runs them now and (indented, for reference) as they ran before. Attribution, not targets."""
    shown = ["refs/heads/", "refs/tags/", refspace.workspace_prefix("carol")]
    hide_post = [
        "-c",
        f"receive.hideRefs={refspace.WORKSPACES}",
        "-c",
        f"receive.hideRefs=!{refspace.workspace_prefix('carol')}",
    ]
    hide_get = ["-c", "receive.hideRefs=refs/", *(x for p in shown for x in ("-c", f"receive.hideRefs=!{p}"))]
    narrow = ["-c", "core.alternateRefsPrefixes=" + " ".join(shown)]
    main = git.run("--git-dir", str(hs["dirs"]["ws"]), "rev-parse", "main").strip()
    quarantine = tmp / "quarantine"
    (quarantine / "pack").mkdir(parents=True, exist_ok=True)
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / "git-home"), "LANG": "C",
            "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}  # fmt: skip

    def in_quarantine(repo: Path) -> dict[str, str]:
        # What receive-pack gives its connectivity check: the pushed objects in a quarantine
        # directory, the repository's own objects as its alternate.
        return base | {"GIT_DIR": str(repo), "GIT_OBJECT_DIRECTORY": str(quarantine),
                       "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / "objects"),
                       "GIT_QUARANTINE_PATH": str(quarantine)}  # fmt: skip

    def connectivity(config: list[str]):
        return lambda repo: (
            [GIT, *hide_post, *config, "rev-list", "--objects", "--stdin", "--not", "--exclude-hidden=receive",
             "--all", "--quiet", "--alternate-refs"], in_quarantine(repo), f"{main}\n".encode())  # fmt: skip

    steps = {
        "advertisement: for-each-ref by prefix (GET)": lambda repo: (
            [GIT, "--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)", *shown], base, None),
        "  before: receive-pack --advertise-refs, hideRefs": lambda repo: (
            [GIT, *hide_get, "receive-pack", "--stateless-rpc", "--advertise-refs", str(repo)], base, None),
        "connectivity check, as receive-pack runs it (POST)": connectivity(narrow),
        "  before: without core.alternateRefsPrefixes": connectivity([]),
        "push record: for-each-ref by prefix, rev-list --stdin": lambda repo: (
            [GIT, "--git-dir", str(repo), "for-each-ref", "--format=%(objectname) %(refname)", *shown], base, None),
        "  before: rev-list --glob (matches every ref)": lambda repo: (
            [GIT, "--git-dir", str(repo), "rev-list", "--topo-order", "--reverse", main, "--not",
             *(x for p in shown for x in (f"--exclude={refspace.workspace_ref('carol', 'b0')}", f"--glob={p}*"))], base, None),
    }  # fmt: skip
    samples = {name: {repo: [] for repo in REPOS} for name in steps}
    failures: dict[str, str] = {}
    for i in range(runs):
        for name, step in steps.items():
            for repo in REPOS if i % 2 == 0 else tuple(reversed(REPOS)):
                argv, env, stdin = step(hs["dirs"][repo])
                r = time_runs(argv, env=env, n=1, stdin=stdin)
                samples[name][repo].append(r["samples_ms"][0])
                if r["failures"]:
                    failures[name] = r["last_error"]
    results = {}
    for name in steps:
        ws, plain = statistics.median(samples[name]["ws"]), statistics.median(samples[name]["plain"])
        results[name] = {"ws_median_ms": ws, "plain_median_ms": plain, "extra_ms": ws - plain, "n": runs,
                         "error": failures.get(name, "")}  # fmt: skip
    return results
