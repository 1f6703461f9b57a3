"""`bench.ssh --profile DIR`: the gateway serves each session through this wrapper of
sshgit.session.serve, which writes the session's cProfile (`<pid>.prof`) and its wall time,
from the fork to the end, per phase (`<pid>.json`) into HOSTSITE_SSH_PROFILE_DIR.

The phases are the session's own calls, timed by wrapping them where session.py looks them up:
the key's look-up, the access check, and git's service (advertisement, request, hooks, record).
"""

from __future__ import annotations

import cProfile
import json
import os
import statistics
import sys
import time
from functools import wraps
from pathlib import Path

PHASES: dict[str, float] = {}


def _timed(name: str, fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[name] = PHASES.get(name, 0.0) + 1000 * (time.perf_counter() - t0)

    return wrapper


def serve(**kwargs) -> int:
    # Imported here: bench.ssh imports this module for summary(), without Django set up.
    from sshgit import session, transport

    out = Path(os.environ["HOSTSITE_SSH_PROFILE_DIR"])
    session.selectors.session_key = _timed("key", session.selectors.session_key)
    session.services.touch_last_used = _timed("touch_last_used", session.services.touch_last_used)
    session._user_grant = _timed("authorize", session._user_grant)
    for name in ("advertise", "rpc"):
        setattr(transport.pipeline, name, _timed(name, getattr(transport.pipeline, name)))
    transport._send = _timed("send (git runs, hooks, record)", transport._send)
    t0 = time.perf_counter()
    release = transport.channel.release

    def timed_release(status: int) -> bool:
        PHASES["(client released at)"] = 1000 * (time.perf_counter() - t0)
        return release(status)

    transport.channel.release = timed_release
    before = set(sys.modules)
    # HOSTSITE_SSH_PROFILE_CPROFILE=0: the phases' wall times without cProfile's overhead.
    profile = cProfile.Profile() if os.environ.get("HOSTSITE_SSH_PROFILE_CPROFILE") != "0" else None
    try:
        if profile is None:
            return session.serve(**kwargs)
        return profile.runcall(session.serve, **kwargs)
    finally:
        total = 1000 * (time.perf_counter() - t0)
        if profile is not None:
            profile.dump_stats(out / f"{os.getpid()}.prof")
        command = str(kwargs.get("command") or "")
        record = {
            "command": command.split(" ")[0],
            "total_ms": total,
            "phases_ms": PHASES,
            "imported": sorted(set(sys.modules) - before),
        }
        (out / f"{os.getpid()}.json").write_text(json.dumps(record))


def summary(profile_dir: Path) -> list[str]:
    """Median wall time per phase of the sessions, per git service (and how many)."""
    by_command: dict[str, list[dict]] = {}
    for path in sorted(profile_dir.glob("*.json")):
        record = json.loads(path.read_text())
        by_command.setdefault(record["command"] or "(none)", []).append(record)
    lines = []
    for command, records in sorted(by_command.items()):
        lines.append(
            f"{command}: {len(records)} sessions, median {_med([r['total_ms'] for r in records]):.0f} ms"
        )
        for phase in sorted({p for r in records for p in r["phases_ms"]}):
            values = [r["phases_ms"][phase] for r in records if phase in r["phases_ms"]]
            lines.append(f"    {phase:<34} median {_med(values):6.1f} ms  (in {len(values)})")
    return lines


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0
