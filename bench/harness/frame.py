"""The frame every benchmark runs in: a temporary directory, the processes it starts, the JSON
report, and a cleanup that Ctrl-C, SIGTERM or a setup failure cannot skip."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.harness.common import SetupError, say
from bench.harness.procs import Processes
from hostsite.processes import StartupError


def _on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_benchmark(
    script: str,
    prefix: str,
    args: argparse.Namespace,
    run_fn: Callable[[argparse.Namespace, Path, Processes], dict],
) -> int:
    """Run `run_fn(args, tmp, procs)`, which returns the report; `script` names the benchmark in
    the messages. Exit status 1 when the setup failed, 130 when interrupted."""
    # Ctrl-C and SIGTERM both end in the cleanup below, even if SIGINT was ignored when we
    # started (a background job of a non-interactive shell).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _on_sigterm)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=args.tmpdir))
    logs = tmp / "logs"
    logs.mkdir()
    procs = Processes(logs)
    status = 0
    try:
        report = run_fn(args, tmp, procs)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
            say(f"wrote {args.json}")
    except (SetupError, StartupError) as exc:
        print(f"{script}: setup failed: {exc}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print(f"{script}: interrupted", file=sys.stderr)
        status = 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not skip the cleanup
        procs.stop_all()
        if args.keep:
            say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    return status


def add_run_options(p: argparse.ArgumentParser) -> None:
    """--json, --tmpdir and --keep: what run_benchmark reads."""
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--tmpdir", type=Path, help="where the temporary directory goes (default: system temp)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, repositories)")
