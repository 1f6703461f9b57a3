"""The hooks' share of a push, for bench.smart_http: pre-receive and post-receive run directly
with the environment the platform gives them, interleaved, beside `python -IS -c pass` and a
bare `django.setup()` (what the hooks avoid by never booting Django)."""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from bench.harness import BASE_DIR, PY, ZERO_OID, time_runs
from bench.harness.hookserve import served


def measure_hooks(hooks_dir: Path, hostsite: dict, tmp: Path, *, runs: int, django_runs: int) -> dict:
    updates = tmp / "hook-ref-updates"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOSTSITE_PUSHER": "bench",
        "HOSTSITE_ROLE": "admin",
        "HOSTSITE_REPO_ID": "1",
        "HOSTSITE_REF_UPDATES_FILE": str(updates),
        "GIT_DIR": hostsite["repo_dir"],
    }
    env = served(env)  # pre-receive relays to this process, as to the platform's (post-receive ignores it)
    line = f"{ZERO_OID} {'1' * 40} refs/heads/bench-hook\n".encode()
    results: dict = {}
    for name in ("pre-receive", "post-receive"):
        hook = hooks_dir / name
        if not os.access(hook, os.X_OK):
            results[name] = {"error": f"{hook} is missing or not executable"}
    # Interleaved, so both hooks see the same noise.
    samples: dict[str, list[dict]] = {"pre-receive": [], "post-receive": []}
    for _ in range(runs):
        for name in samples:
            if name in results:
                continue
            samples[name].append(time_runs([str(hooks_dir / name)], env=env, n=1, stdin=line))
            updates.write_bytes(b"")
    for name, runs_ in samples.items():
        if name in results:
            continue
        times = [r["median_ms"] for r in runs_]
        results[name] = {
            "n": len(times),
            "median_ms": statistics.median(times),
            "min_ms": min(times),
            "max_ms": max(times),
            "failures": sum(r["failures"] for r in runs_),
            "last_error": next((r["last_error"] for r in runs_ if r["last_error"]), ""),
        }
    results["python -IS -c pass"] = time_runs([PY, "-IS", "-c", "pass"], env=env, n=runs)
    denv = {k: v for k, v in hostsite["env"].items()}
    results["django.setup()"] = time_runs(
        [PY, "-c", "import django; django.setup()"], env=denv, n=django_runs, cwd=BASE_DIR
    )
    for r in results.values():
        r.pop("samples_ms", None)
    return results
