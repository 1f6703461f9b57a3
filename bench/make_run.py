"""`make run`'s first steps (migrate, static files, the demo, spooled pushes) as one Django
process (`manage.py prepare_run`) against one `manage.py` per step, side by side in one run:
on a fresh VAR_DIR (a newcomer's first start) and on one already prepared (every start after).

    .venv/bin/python -m bench.make_run [--rounds 5]

Each round runs both ways, in alternating order, each on a VAR_DIR of its own; the figures are
each way's median wall time and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.harness.common import hostsite_env, manage

STEPS = (
    ("migrate", "--noinput", "-v", "0"),
    ("collectstatic", "--noinput", "-v", "0"),
    ("seed_demo",),
    ("replay_pushes",),
)


def _manage(var_dir: Path, *args: str) -> None:
    manage(hostsite_env(var_dir, 8000), *args)  # the port is never opened


def one_process(var_dir: Path) -> None:
    _manage(var_dir, "prepare_run")


def one_per_step(var_dir: Path) -> None:
    for step in STEPS:
        _manage(var_dir, *step)


WAYS = {"one process": one_process, "one per step": one_per_step}


def timed(way, var_dir: Path) -> float:
    started = time.monotonic()
    way(var_dir)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    figures: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-make-run-") as tmp:
        for round_ in range(options.rounds):
            names = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
            for name in names:
                var_dir = Path(tmp) / f"{name.replace(' ', '-')}-{round_}"
                figures.setdefault((name, "first start"), []).append(timed(WAYS[name], var_dir))
                figures.setdefault((name, "next start"), []).append(timed(WAYS[name], var_dir))
    for start in ("first start", "next start"):
        medians = {name: statistics.median(figures[name, start]) for name in WAYS}
        shown = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in medians.items())
        ratio = medians["one process"] / medians["one per step"]
        print(f"{start}: {shown}; one process / one per step = {ratio:.2f}x")


if __name__ == "__main__":
    main()
