"""make test-repeat's runner, on a small suite of its own: one test passes, one fails only in
the first run (as a flaky test does), one is skipped, one is not live and must not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

SUITE = """
from pathlib import Path

import pytest

COUNTER = Path(__file__).with_name("runs")

pytestmark = pytest.mark.live


def test_steady():
    pass


def test_flaky():
    runs = int(COUNTER.read_text()) if COUNTER.exists() else 0
    COUNTER.write_text(str(runs + 1))
    assert runs > 0, "fails in the first run only"


def test_skipped():
    pytest.skip("not here")
"""

NOT_LIVE = """
def test_not_live():
    raise AssertionError("ran a test outside the live subset")
"""


def test_every_run_is_counted_and_a_test_failing_in_one_run_is_named(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    live: live\n")
    (tmp_path / "test_live.py").write_text(SUITE)
    (tmp_path / "test_other.py").write_text(NOT_LIVE)
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    # Only pytest's own plugins: the installed ones (Django, Hypothesis, schemathesis) take
    # seconds to load per run and play no part here.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.repeat", "--runs", "3", "--", "-q"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = result.stdout.splitlines()
    runs = [re.sub(r" in \d+s ", " ", line) for line in lines if line.startswith("repeat: run ")]
    assert runs == [
        "repeat: run 1/3: 1 passed, 1 failed, 0 errors, 1 skipped (exit 1)",
        "repeat: run 2/3: 2 passed, 0 failed, 0 errors, 1 skipped (exit 0)",
        "repeat: run 3/3: 2 passed, 0 failed, 0 errors, 1 skipped (exit 0)",
    ], result.stdout
    assert lines[-2:] == ["repeat: 1 tests failed in some of 3 runs:", "  test_live::test_flaky: runs 1"]
    assert result.returncode == 1
