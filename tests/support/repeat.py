"""Run the live subset of the suite N times and say what failed in any run.

`python -m tests.support.repeat --runs N -- <pytest options>` runs `pytest -m live` N times,
whatever each run's outcome (a flaky test shows itself as a test that fails in some runs, not
all), printing each run's counts as it ends and, at the end, every test that failed or errored
in any run with the runs it failed in. Exits non-zero if any run failed. The counts come from
each run's JUnit XML report, which pytest-xdist's workers write through the controller.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    bad: list[str] = field(default_factory=list)

    def counts(self) -> str:
        return f"{self.passed} passed, {self.failed} failed, {self.errors} errors, {self.skipped} skipped"


def read_report(path: Path) -> Outcome:
    """The outcome of one run from its JUnit XML; a test failing in its call and erroring in
    its teardown counts once, as failed."""
    outcome = Outcome()
    if not path.exists():
        return outcome
    for case in ElementTree.parse(path).iter("testcase"):  # noqa: S314 - pytest wrote it
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag for child in case}
        if "failure" in kinds:
            outcome.failed += 1
            outcome.bad.append(name)
        elif "error" in kinds:
            outcome.errors += 1
            outcome.bad.append(name)
        elif "skipped" in kinds:
            outcome.skipped += 1
        else:
            outcome.passed += 1
    return outcome


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    extra = [arg for arg in options.pytest_args if arg != "--"]
    failures: dict[str, list[int]] = defaultdict(list)
    broken_runs = 0
    with tempfile.TemporaryDirectory(prefix="repeat-") as reports:
        for run in range(1, options.runs + 1):
            report = Path(reports) / f"run-{run}.xml"
            started = time.monotonic()
            argv_run = [sys.executable, "-m", "pytest", "-m", "live", f"--junitxml={report}", *extra]
            code = subprocess.run(argv_run, check=False).returncode
            outcome = read_report(report)
            for name in outcome.bad:
                failures[name].append(run)
            # A run that failed without a failing test (a collection error, a crash) counts too.
            if code not in (0, 1) or (code == 1 and not outcome.bad):
                broken_runs += 1
            print(
                f"repeat: run {run}/{options.runs}: {outcome.counts()} "
                f"in {time.monotonic() - started:.0f}s (exit {code})",
                flush=True,
            )
    if failures:
        print(f"repeat: {len(failures)} tests failed in some of {options.runs} runs:")
        for name, runs in sorted(failures.items()):
            print(f"  {name}: runs {', '.join(map(str, runs))}")
    else:
        print(f"repeat: no test failed in {options.runs} runs")
    if broken_runs:
        print(f"repeat: {broken_runs} runs ended with an error outside any test (output above)")
    return 1 if failures or broken_runs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
